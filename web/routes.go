package web

import (
	"io/fs"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"
)

// routes registers every route: this is the one table. Reading this
// function tells every URL the product answers, and the group a route is
// registered on tells which middleware it runs:
//   - e (no group): machines and programs — probes, metrics, immutable
//     downloads, Stripe's signed webhook, MCP and the agent protocol. No
//     cookie is read or set and no CSRF token is asked for.
//   - pages: what a browser opens. The CSRF guard (csrf) and the session
//     (loadSession) run, and signed-in pages add requireUser.
//   - public and api: the REST API under /v1. A bearer key or, from the
//     dashboard's own scripts, the session (requireAPI then checks the CSRF
//     token itself).
func (h *handler) routes(e *echo.Echo) {
	pages := newRouteGroup(e, "", h.csrf, h.loadSession)
	public := newRouteGroup(e, "/v1", h.loadAPISession)

	e.GET("/healthz", h.healthz)
	e.GET("/readyz", h.readyz)
	e.GET("/metrics", h.metrics)
	e.GET("/static/*", h.assets.serve)
	e.HEAD("/static/*", h.assets.serve)
	pages.GET("/", func(c echo.Context) error { return c.Redirect(http.StatusSeeOther, "/offers") })
	// An unknown address is answered as a page (with the signed-in
	// navigation when there is a session).
	e.RouteNotFound("/*", notFound, h.csrf, h.loadSession)

	// Public pages and their htmx partials (offers are browsable signed out).
	pages.GET("/offers", h.listOffers)

	// Accounts (A1): public forms; the invite link's token is its capability.
	pages.GET("/signup", h.showSignup)
	pages.POST("/signup", h.signup)
	pages.GET("/login", h.showLogin)
	pages.POST("/login", h.login)
	pages.POST("/logout", h.logout)
	pages.GET("/invites/:token", h.showInvite)
	pages.GET("/forgot-password", h.showForgotPassword)
	pages.POST("/forgot-password", h.forgotPassword)
	pages.GET("/reset-password/:token", h.showResetPassword) // the token is its capability
	pages.POST("/reset-password/:token", h.resetPassword)

	// Public REST API v1 (an API key is optional there).
	public.GET("/gpu/offers", h.apiListOffers, h.optionalAPI)
	public.GET("/gpu/offers/:id/availability", h.apiOfferAvailability, h.optionalAPI) // X18: the calendar
	public.GET("/openapi.json", h.openAPI)                                            // API1: the document describing every /v1 route

	// The agent binary for the machines' start-up scripts (OP1): public,
	// versioned, with its checksum.
	e.GET("/agent/:version/:file", h.agentBinary)
	e.HEAD("/agent/:version/:file", h.agentBinary)

	// MCP for AI agents (API5): the API's operations as tools over
	// Streamable HTTP, stateless (POST only), with an API key.
	e.POST("/mcp", h.mcp, h.mcpOrigin, h.requireAPIKey)
	e.Match([]string{http.MethodGet, http.MethodDelete}, "/mcp", mcpPostOnly, h.mcpOrigin, h.requireAPIKey)

	// Signed-in pages (app) and the authenticated API (api). Every handler
	// below loads what it touches through principal(c).Org: another org's id
	// answers 404. TestRouteWalk proves it for every registered route.
	app := pages.Group("", h.requireUser)
	api := public.Group("", h.requireAPI)

	app.POST("/invites/:token/accept", h.acceptInvite)
	app.POST("/orgs/:id/switch", h.switchOrg)
	app.POST("/environments/:id/switch", h.switchEnvironment)
	app.GET("/settings", h.showSettings)
	app.POST("/settings/profile", h.updateProfile)
	app.POST("/settings/password", h.changePassword)
	app.POST("/settings/sessions/revoke", h.revokeSessions)
	app.GET("/settings/ssh-keys", h.listSSHKeys)
	app.POST("/settings/ssh-keys", h.addSSHKey)
	app.POST("/settings/ssh-keys/:id/delete", h.deleteSSHKey)
	app.GET("/settings/api-keys", h.listAPIKeys)
	app.POST("/settings/api-keys", h.createAPIKey)
	app.POST("/settings/api-keys/:id/revoke", h.revokeAPIKey)
	app.GET("/settings/environments", h.listEnvironments)
	app.POST("/settings/environments", h.createEnvironment, h.requireManager)

	// Team settings and the audit log: owners and admins (members get 403).
	app.GET("/settings/team", h.showTeam, h.requireManager)
	app.POST("/settings/team/invites", h.inviteMember, h.requireManager)
	app.POST("/settings/team/invites/:id/revoke", h.revokeInvite, h.requireManager)
	app.POST("/settings/team/members/:id/role", h.changeRole, h.requireManager)
	app.POST("/settings/team/members/:id/remove", h.removeMember, h.requireManager)
	app.GET("/settings/audit", h.showAudit, h.requireManager)

	// Webhook endpoints of the environment (X8): owners and admins.
	app.GET("/settings/webhooks", h.listWebhooks, h.requireManager)
	app.POST("/settings/webhooks", h.createWebhook, h.requireManager)
	app.GET("/settings/webhooks/:id", h.showWebhook, h.requireManager)
	app.POST("/settings/webhooks/:id/test", h.testWebhook, h.requireManager)
	app.POST("/settings/webhooks/:id/rotate", h.rotateWebhook, h.requireManager)
	app.POST("/settings/webhooks/:id/toggle", h.toggleWebhook, h.requireManager)
	app.POST("/settings/webhooks/:id/delete", h.deleteWebhook, h.requireManager)
	app.POST("/settings/webhooks/:id/deliveries/:delivery/redeliver", h.redeliverWebhook, h.requireManager)
	api.GET("/webhooks", h.apiListWebhooks, h.requireManager)
	api.POST("/webhooks", h.apiCreateWebhook, h.requireManager)
	api.GET("/webhooks/:id", h.apiGetWebhook, h.requireManager)
	api.PATCH("/webhooks/:id", h.apiUpdateWebhook, h.requireManager)
	api.DELETE("/webhooks/:id", h.apiDeleteWebhook, h.requireManager)
	api.POST("/webhooks/:id/rotate-secret", h.apiRotateWebhookSecret, h.requireManager)
	api.POST("/webhooks/:id/test", h.apiTestWebhook, h.requireManager)
	api.GET("/webhooks/:id/deliveries", h.apiWebhookDeliveries, h.requireManager)
	api.POST("/webhooks/:id/deliveries/:delivery/redeliver", h.apiRedeliverWebhook, h.requireManager)

	// Billing: owners and admins (members get 403). Top-ups (B4) are
	// credited by Stripe's verified webhook, which signs its own requests.
	app.GET("/billing", h.showBilling, h.requireManager)
	app.GET("/billing/usage/:id", h.showUsageLine, h.requireManager)
	app.GET("/billing/usage.csv", h.usageCSV, h.requireManager)
	app.GET("/billing/transactions.csv", h.transactionsCSV, h.requireManager)
	app.POST("/billing/top-ups", h.addFunds, h.requireManager)
	api.POST("/billing/top-ups", h.apiCreateTopUp, h.requireManager)
	app.POST("/billing/auto-recharge", h.saveAutoRecharge, h.requireManager)
	api.GET("/billing/auto-recharge", h.apiAutoRecharge, h.requireManager)
	api.PUT("/billing/auto-recharge", h.apiPutAutoRecharge, h.requireManager)
	api.GET("/billing/balance", h.apiBillingBalance, h.requireManager)
	api.GET("/billing/usage", h.apiBillingUsage, h.requireManager)
	app.POST("/billing/budgets/:envId", h.saveBudget, h.requireManager) // B5: an environment's monthly budget
	app.POST("/billing/budgets/:envId/delete", h.removeBudget, h.requireManager)
	api.GET("/billing/budgets", h.apiBudgets, h.requireManager)
	api.PUT("/billing/budgets/:envId", h.apiPutBudget, h.requireManager)
	api.DELETE("/billing/budgets/:envId", h.apiDeleteBudget, h.requireManager)
	e.POST("/webhooks/stripe", h.stripeWebhook)

	// Request a quote (RQ1, RQ2): any member asks; the org's requests are
	// listed for all of its members.
	app.GET("/quote-requests", h.listQuoteRequests)
	app.GET("/quote-requests/new", h.newQuoteRequest)
	app.POST("/quote-requests", h.createQuoteRequest)
	app.GET("/quote-requests/:id", h.showQuoteRequest)
	app.GET("/reservations", h.listReservations) // X18
	app.GET("/reservations/:id", h.showReservation)
	app.GET("/reservations/new", h.newReservationForm) // X18: calendar, form, preview
	app.POST("/reservations", h.createReservationForm)
	api.POST("/quote-requests", h.apiCreateQuoteRequest)
	api.GET("/quote-requests", h.apiListQuoteRequests)
	api.GET("/quote-requests/:id", h.apiGetQuoteRequest)
	api.POST("/reservations", h.apiCreateReservation) // X18: reserved capacity
	api.GET("/reservations", h.apiListReservations)
	api.GET("/reservations/:id", h.apiGetReservation)
	api.PATCH("/reservations/:id", h.apiChangeReservation)
	api.POST("/reservations/:id/cancel", h.apiCancelReservation)

	// Operators only (`clusterdeck admin grant EMAIL`).
	admin := app.Group("/admin", h.requireOperator)
	admin.GET("", h.showAdmin)
	admin.POST("/orgs/:id/quota", h.setOrgQuota)
	admin.GET("/quote-requests", h.adminQuoteRequests)
	admin.POST("/quote-requests/:id/status", h.setQuoteRequestStatus)
	admin.GET("/leaks", h.adminLeaks)
	admin.GET("/prices", h.adminPrices) // OP1, Q2: clusters billed above their launch cost
	admin.GET("/lemons", h.adminLemons)
	admin.POST("/lemons/:id/release", h.releaseLemon)
	admin.GET("/quote-requests/:id/private-offer", h.showPrivateOfferForm)
	admin.POST("/quote-requests/:id/private-offers", h.createPrivateOffer)
	admin.GET("/orgs/:id/balance", h.adminBalance)
	admin.POST("/orgs/:id/adjustments", h.adjustBalance)
	admin.POST("/orgs/:id/top-ups/:topUp/reverse", h.reverseTopUp) // B9
	admin.GET("/providers", h.adminProviders)
	admin.POST("/providers/:name/markup", h.setProviderMarkup)
	admin.GET("/payments", h.adminPayments)
	admin.GET("/machines", h.adminMachines)
	admin.POST("/machines", h.addMachine)
	admin.POST("/machines/:name/delete", h.removeMachine)
	admin.GET("/jobs", h.adminJobs)
	admin.POST("/jobs/:name/run", h.runJobNow)
	admin.GET("/audit", h.adminAudit)

	api.GET("/me", h.apiMe)
	api.GET("/events", h.apiEvents) // X16: the environment's events after a cursor, paged or streamed

	// Clusters (L1, N1): pages, then the API (quote, launch, lifecycle).
	app.GET("/runs", h.listRuns)    // X17
	app.GET("/runs/:id", h.showRun) // X17
	app.GET("/clusters", h.listClusters)
	app.GET("/clusters/new", h.newCluster)
	app.POST("/clusters", h.createCluster)
	app.GET("/clusters/:id", h.showCluster)
	app.POST("/clusters/:id/terminate", h.terminateCluster)
	app.POST("/clusters/:id/retry-install", h.retryInstall)
	app.GET("/clusters/:id/kubeconfig", h.downloadKubeconfig)
	app.GET("/clusters/:id/logs/stream", h.streamLogsPage)
	app.GET("/clusters/:id/logs/panel", h.logPanel)
	app.GET("/clusters/:id/logs/download", h.downloadLog)        // a node's kept log as a text file
	app.POST("/clusters/:id/recovery", h.setRecovery)            // R3
	app.POST("/clusters/:id/gpu-watch", h.setGPUWatch)           // X15: stall alert and idle rule
	app.GET("/clusters/:id/gpu-watch", h.gpuWatchPage)           // a reload of a refused form: the cluster's page
	app.POST("/clusters/:id/recover", h.recoverNow)              // R5
	app.POST("/clusters/:id/verify", h.verifyAgain)              // X13: run verification again
	app.POST("/clusters/:id/keep", h.keepUnverified)             // X13: keep it as it is
	app.POST("/clusters/:id/workers", h.addWorker)               // L10
	app.POST("/clusters/:id/nodes/:rank/replace", h.replaceNode) // X5
	app.POST("/clusters/:id/resume", h.resumeCluster)            // B6
	app.POST("/clusters/:id/stop", h.stopCluster)                // B6: the customer's stop

	// Volumes (V1–V5): the current environment's on the page, the key's in the API.
	app.GET("/volumes", h.listVolumes)
	app.POST("/volumes", h.createVolume)
	app.POST("/volumes/:id/grow", h.growVolume)
	app.POST("/volumes/:id/delete", h.deleteVolume)
	api.GET("/volumes", h.apiListVolumes)
	api.POST("/volumes", h.apiCreateVolume)
	api.GET("/volumes/:id", h.apiGetVolume)
	api.POST("/volumes/:id/grow", h.apiGrowVolume)
	api.DELETE("/volumes/:id", h.apiDeleteVolume)

	api.POST("/runs", h.apiSubmitRun) // X17: runs that heal themselves
	api.GET("/runs", h.apiListRuns)
	api.GET("/runs/:id", h.apiGetRun)
	api.POST("/gpu/clusters/quote", h.apiQuote)
	api.POST("/gpu/clusters", h.apiLaunch)
	api.GET("/gpu/clusters", h.apiListClusters)
	api.GET("/gpu/clusters/:id", h.apiGetCluster)
	api.POST("/gpu/clusters/:id/terminate", h.apiTerminate)
	api.GET("/gpu/clusters/:id/connections", h.apiConnections)
	api.GET("/gpu/clusters/:id/logs", h.apiLogs)
	api.GET("/gpu/clusters/:id/kubeconfig", h.downloadKubeconfig)
	api.POST("/gpu/clusters/:id/retry-install", h.apiRetryInstall)
	api.PUT("/gpu/clusters/:id/recovery", h.apiSetRecovery)
	api.GET("/gpu/clusters/:id/gpu-watch", h.apiGetGPUWatch) // X15
	api.PUT("/gpu/clusters/:id/gpu-watch", h.apiSetGPUWatch)
	api.GET("/gpu/clusters/:id/metrics", h.apiGPUMetrics, // X15: what the GPUs are doing; X19: per key and organisation
		newReadLimits(h.agentLimitClock(), h.refusalHold(), "GPU metrics", GPUMetricsPerMinute, GPUMetricsBurst, GPUMetricsOrgPerMinute, gpuMetricsOrgBurst).limit)
	api.POST("/gpu/clusters/:id/recover", h.apiRecoverNow)
	api.POST("/gpu/clusters/:id/verify", h.apiVerifyAgain)  // X13
	api.POST("/gpu/clusters/:id/keep", h.apiKeepUnverified) // X13
	api.POST("/gpu/clusters/:id/workers", h.apiAddWorker)
	api.POST("/gpu/clusters/:id/nodes/:rank/replace", h.apiReplaceNode)
	api.POST("/gpu/clusters/:id/resume", h.apiResume)
	api.POST("/gpu/clusters/:id/stop", h.apiStop)

	// The cluster agent's protocol: node tokens (agentAuth), outside the
	// customer API's keys.
	// A machine placed with the cluster's bootstrap token claims its rank
	// first (cdb_…, OP1); the answer is its node token.
	e.POST("/v1/agent/claim", h.agentClaim)
	agent := newRouteGroup(e, "/v1/agent", h.agentAuth)
	agent.POST("/checkin", h.agentCheckin)
	agent.POST("/peers", h.agentPeers)
	// X19: heartbeats are rate-limited per node token, like logs, before
	// the token is looked up.
	h.heartbeats = newHeartbeatLimiter(h.agentLimitClock(), h.refusalHold())
	e.POST("/v1/agent/heartbeat", h.agentHeartbeat, h.heartbeats.limitHeartbeats, h.agentAuth)
	agent.POST("/logs", h.agentLogs, newLogLimiter(h.Store.Now).limitLogs) // N6: per node
	agent.POST("/tasks/:task", h.agentTaskResult)

	// Development-only routes: never registered in production.
	if !h.Config.Production {
		dev := newRouteGroup(e, "/dev", localOnly, h.loadSession)
		dev.GET("/clock", h.devClock)
		dev.POST("/clock", h.devAdvanceClock)
		dev.POST("/jobs/:name/run", h.devRunJob)
		dev.POST("/sim/faults", h.devSimFaults)
		dev.GET("/mailbox", h.devMailbox)
		dev.GET("/mailbox/:id", h.devMail)
	}
}

// openAPI is GET /v1/openapi.json: the hand-written OpenAPI 3.1 document
// (static/openapi.json). TestOpenAPICoversEveryRoute keeps it in step with
// the routes above.
func (h *handler) openAPI(c echo.Context) error {
	doc, err := fs.ReadFile(h.Static, "openapi.json")
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, doc)
}

// routeGroup registers routes under a path prefix with the middleware the
// group carries, then each route's own. Unlike echo's Group with middleware,
// it adds no catch-all routes, so an unknown address is a plain 404 rather
// than a group's guard answering it.
type routeGroup struct {
	e      *echo.Echo
	prefix string
	mw     []echo.MiddlewareFunc
}

func newRouteGroup(e *echo.Echo, prefix string, mw ...echo.MiddlewareFunc) *routeGroup {
	return &routeGroup{e: e, prefix: prefix, mw: mw}
}

// Group is a sub-group: this group's prefix and middleware, then its own.
func (g *routeGroup) Group(prefix string, mw ...echo.MiddlewareFunc) *routeGroup {
	return &routeGroup{e: g.e, prefix: g.prefix + prefix, mw: append(slices.Clip(g.mw), mw...)}
}

func (g *routeGroup) add(method, path string, h echo.HandlerFunc, mw []echo.MiddlewareFunc) {
	g.e.Add(method, g.prefix+path, h, append(slices.Clip(g.mw), mw...)...)
}

func (g *routeGroup) GET(path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	g.add(http.MethodGet, path, h, mw)
}

func (g *routeGroup) POST(path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	g.add(http.MethodPost, path, h, mw)
}

func (g *routeGroup) PUT(path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	g.add(http.MethodPut, path, h, mw)
}

func (g *routeGroup) PATCH(path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	g.add(http.MethodPatch, path, h, mw)
}

func (g *routeGroup) DELETE(path string, h echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	g.add(http.MethodDelete, path, h, mw)
}

// notFound answers an address no route has.
func notFound(echo.Context) error { return echo.ErrNotFound }
