package web

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/nodespec"
	"github.com/clusterdeck/clusterdeck/models/software"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// listClusters is GET /clusters: the list, or for htmx polling only its rows.
func (h *handler) listClusters(c echo.Context) error {
	p := principal(c)
	ctx := c.Request().Context()
	clusters, err := h.Store.ClustersForOrg(ctx, p.Org.ID)
	if err != nil {
		return err
	}
	pg := views.ClustersPage{Meta: h.meta(c, "Clusters")}
	if p.User != nil {
		keys, err := h.Store.SSHKeys(ctx, p.Org.ID, p.User.ID)
		if err != nil {
			return err
		}
		pg.HasSSHKeys = len(keys) > 0
	}
	now := h.Store.Now()
	// B1: an ended cluster's row says what it cost, not a price per hour
	// it no longer pays ($0.00 for one that never came up).
	cost := map[string]models.Money{}
	if slices.ContainsFunc(clusters, func(cl models.Cluster) bool { return cl.Status.Terminal() && cl.ReadyAt != nil }) {
		us, err := h.Store.UsageForOrg(ctx, p.Org.ID, time.Time{})
		if err != nil {
			return err
		}
		for _, u := range us {
			cost[u.Cluster.ID] = u.Completed + u.Accumulating
		}
	}
	for _, cl := range clusters {
		row := clusterRow(cl, now)
		if cl.Status.Terminal() {
			row.Price, row.PriceOf = models.USD(cost[cl.ID])+" in all", "Cost"
		}
		pg.AnyUnderWay = pg.AnyUnderWay || row.UnderWay
		pg.Rows = append(pg.Rows, row)
	}
	return page(c, http.StatusOK, views.ClustersPageView(pg), views.ClusterRows(pg))
}

func clusterRow(cl models.Cluster, now time.Time) views.ClusterRow {
	status := string(cl.Status)
	if cl.Terminating() {
		status = views.TerminatingBadge // L7: the badge says what is under way
	}
	return views.ClusterRow{
		ID: cl.ID, Name: cl.Name, Status: status,
		Shape:    views.Shape(cl.Nodes, cl.GPUsPerNode, cl.Accelerator),
		Location: cl.LocationName, Age: age(now.Sub(cl.CreatedAt)),
		Price:    models.PriceUSD(cl.USDPerHour) + "/h",
		UnderWay: cl.UnderWay(),
	}
}

func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// newCluster is GET /clusters/new?offer=ID&nodes=N: it locks a price for the
// offer at that size and shows the launch page (L1 "straight from an offer").
func (h *handler) newCluster(c echo.Context) error {
	p := principal(c)
	ctx := c.Request().Context()
	r, err := h.launchRequest(c)
	var sp *storageProblem
	if errors.As(err, &sp) {
		err = nil // priced without the volume, the problem said beside it
	}
	if err != nil {
		return err
	}
	nodes := r.Nodes
	q, err := h.Store.ReuseQuote(ctx, p.Org.ID, p.Env.ID, r)
	var fe models.FieldErrors
	if errors.As(err, &fe) && sp == nil && (r.VolumeID != "" || r.VolumeGB > 0) {
		for _, k := range []string{"volumeId", "storage.persistentGb", "location"} { // V2, V5
			if msg, ok := fe[k]; ok {
				sp = &storageProblem{msg: "This offer cannot take that volume: " + msg, typed: strings.TrimSpace(c.QueryParam("persistent_gb"))}
				r.VolumeID, r.VolumeGB = "", 0
				q, err = h.Store.ReuseQuote(ctx, p.Org.ID, p.Env.ID, r)
				break
			}
		}
	}
	var nc *models.NoCapacityError
	if errors.As(err, &nc) && nc.Reason == models.PrivateOfferExpired {
		return echo.NewHTTPError(http.StatusConflict, "That private offer has expired. Request a new quote.")
	}
	if errors.As(err, &nc) && nc.Reason == models.CatalogStaleReason {
		return echo.NewHTTPError(http.StatusConflict, "This offer's prices are being refreshed (its provider did not answer recently). Try again in a few minutes.")
	}
	if errors.As(err, &nc) {
		return echo.NewHTTPError(http.StatusConflict, "That offer cannot start "+strconv.Itoa(nodes)+" machines now. Pick another on the offers page.")
	}
	if errors.As(err, &fe) {
		return echo.NewHTTPError(http.StatusUnprocessableEntity, "A cluster has 2 to 64 machines.")
	}
	if err != nil {
		return err
	}
	form := views.LaunchForm{QuoteID: q.ID, FormToken: newToken(18), Software: "none", Verify: true,
		Name: models.DefaultClusterName(r.Accelerator, nodes)}
	lp, err := h.launchPage(c, q, form, nil)
	if err != nil {
		return err
	}
	if sp != nil { // A4: the size as typed, the problem beside it
		lp.Storage.Problem, lp.Storage.NewGB = sp.msg, sp.typed
		return render(c, http.StatusUnprocessableEntity, views.LaunchPageView(lp))
	}
	return render(c, http.StatusOK, views.LaunchPageView(lp))
}

// storageProblem is a launch page's volume choice that cannot be priced:
// the page prices the launch without it and says why beside the field.
type storageProblem struct{ msg, typed string }

func (e *storageProblem) Error() string { return e.msg }

// launchRequest is what /clusters/new?offer=ID&nodes=N (or ?private=ID, an
// organisation's private offer, X9) asks to price.
func (h *handler) launchRequest(c echo.Context) (models.ShapeQuery, error) {
	ctx := c.Request().Context()
	if id := c.QueryParam("private"); id != "" {
		po, err := h.Store.PrivateOfferForOrg(ctx, principal(c).Org.ID, id)
		return po.Request(), err
	}
	offerID := c.QueryParam("offer")
	nodes, err := strconv.Atoi(c.QueryParam("nodes"))
	if err != nil || offerID == "" {
		return models.ShapeQuery{}, echo.NewHTTPError(http.StatusBadRequest, "Pick an offer and a machine count on the offers page.")
	}
	o, err := h.Store.OfferByID(ctx, offerID)
	if err != nil {
		return models.ShapeQuery{}, err
	}
	r := models.ShapeQuery{Accelerator: o.Accelerator, Nodes: nodes, GPUsPerNode: o.GPUsPerNode, OfferID: o.ID,
		Location: o.Location, IncludeCommunity: o.Community}
	// V2: mount an existing volume, or create one with the cluster.
	r.VolumeID = strings.TrimSpace(c.QueryParam("volume"))
	if gb := strings.TrimSpace(c.QueryParam("persistent_gb")); gb != "" && r.VolumeID == "" {
		if r.VolumeGB, err = strconv.Atoi(gb); err != nil || r.VolumeGB < 0 {
			r.VolumeGB = 0
			return r, &storageProblem{msg: "Give the new volume's size as a whole number of GB, like 500.", typed: gb}
		}
	}
	return r, nil
}

// launchPage builds the launch page's view for a quote and a form as typed.
func (h *handler) launchPage(c echo.Context, q models.Quote, form views.LaunchForm, problems map[string]string) (views.LaunchPage, error) {
	p := principal(c)
	ctx := c.Request().Context()
	a, err := h.Store.AdmissionFor(ctx, p.Org.ID, q.USDPerHour)
	if err != nil {
		return views.LaunchPage{}, err
	}
	now := h.Store.Now()
	qv := quoteView(q)
	qv.NowISO, qv.Lapsed = now.UTC().Format(time.RFC3339), !now.Before(q.ExpiresAt)
	lp := views.LaunchPage{
		Meta: h.meta(c, "Launch"), Quote: qv, Form: form, Problems: problems,
		Balance: models.USD(a.Balance), BalanceAfterHour: models.USD(a.Balance - a.Committed - q.USDPerHour),
		VerifyBilling: models.VerifyBillingLine(q.Nodes),
	}
	if a.Committed > 0 {
		lp.Committed = models.PriceUSD(a.Committed) + "/h"
	}
	if a.Shortfall() > 0 {
		// L2: the way to add funds keeps the quote: the billing page links
		// back to it and a top-up returns there.
		lp.Shortfall, lp.TopUpURL = balanceProblem(a), topUpPath+"#add-funds"
		if r := c.Request(); r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/clusters/new") {
			lp.TopUpURL = topUpPath + "?back=" + url.QueryEscape(r.URL.RequestURI()) + "#add-funds"
		}
	}
	for _, s := range softwareOptions(q.MachineKind) {
		s.Checked = s.Value == form.Software
		lp.Software = append(lp.Software, s)
	}
	if lp.Storage, err = h.launchStorage(c, q); err != nil {
		return lp, err
	}
	if p.User != nil {
		keys, err := h.Store.SSHKeys(ctx, p.Org.ID, p.User.ID)
		if err != nil {
			return lp, err
		}
		for _, k := range keys {
			checked := len(form.SSHKeyIDs) == 0 && form.Env == "" || slices.Contains(form.SSHKeyIDs, k.ID)
			lp.SSHKeys = append(lp.SSHKeys, views.SSHKeyOption{ID: k.ID, Name: k.Name, Fingerprint: k.Fingerprint, Checked: checked})
		}
	}
	return lp, nil
}

// softwareOptions lists S1's choices: none, then every registered software
// that runs on kind (Kubernetes is hidden on containers).
func softwareOptions(kind string) []views.SoftwareOption {
	opts := []views.SoftwareOption{
		{Value: software.None, Label: "None", Help: "Machines, private network, hostfile and ready-made torchrun, mpirun and DeepSpeed commands."},
	}
	for _, sw := range software.All() {
		if kind == "" || sw.RunsOn(kind) {
			opts = append(opts, views.SoftwareOption{Value: sw.Name, Label: sw.Label, Help: sw.Help})
		}
	}
	return opts
}

func quoteView(q models.Quote) views.QuoteView {
	qv := views.QuoteView{
		ID: q.ID, Shape: views.Shape(q.Nodes, q.GPUsPerNode, q.Accelerator), Location: q.LocationName,
		Interconnect: views.InterconnectLabel(q.Interconnect), Kind: views.KindLabel(q.MachineKind),
		Price: models.PriceUSD(q.USDPerHour) + "/h", MachinePrice: models.PriceUSD(q.MachineHour()) + "/h",
		ExpiresAt: q.ExpiresAt.Format("15:04 MST, 2 Jan"), Community: q.Community,
		ExpiresISO: q.ExpiresAt.UTC().Format(time.RFC3339), RequoteURL: requoteURL(q),
	}
	for _, li := range q.LineItems() {
		qv.Lines = append(qv.Lines, views.LineView{Name: lineName(li.Name), Quantity: li.Quantity, Price: models.PriceUSD(li.USDPerHour) + "/h"})
	}
	return qv
}

// requoteURL is the launch page that locks a fresh price for what q priced:
// the same offer and machine count, or the same private offer (X9).
func requoteURL(q models.Quote) string {
	if q.PrivateOfferID != "" {
		return "/clusters/new?private=" + url.QueryEscape(q.PrivateOfferID)
	}
	return "/clusters/new?offer=" + url.QueryEscape(q.OfferID) + "&nodes=" + strconv.Itoa(q.Nodes)
}

func lineName(n string) string {
	switch n {
	case "gpus":
		return "GPUs"
	case "machines":
		return "Machines"
	case "root_disks":
		return "Root disks"
	case "volume":
		return "Persistent volume"
	}
	return n
}

// launchForm is the workload form (POST /clusters).
type launchForm struct {
	QuoteID      string   `form:"quote_id"`
	FormToken    string   `form:"form_token"`
	Name         string   `form:"name"`
	Software     string   `form:"software"`
	Image        string   `form:"image"`
	StartCommand string   `form:"start_command"`
	Env          string   `form:"env"`
	Ports        string   `form:"ports"`
	SSHKeyIDs    []string `form:"ssh_key_ids"`
	IdleAction   string   `form:"idle_action"` // X15: "" = no idle rule (the default), mail, stop or terminate
	IdleHours    string   `form:"idle_hours"`
	// Verification before hand-over (X13): the form sends
	// verify_shown=1 with its checkbox; a post without it keeps the default (on).
	VerifyShown string `form:"verify_shown"`
	Verify      string `form:"verify"`
}

// verify is the form's choice: on unless the checkbox was shown and cleared.
func (f launchForm) verify() bool { return f.VerifyShown == "" || f.Verify == "on" }

// parseEnvLines reads KEY=value lines.
func parseEnvLines(s string) (map[string]string, string) {
	env := map[string]string{}
	for i, line := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Sprintf("line %d is not KEY=value", i+1)
		}
		env[strings.TrimSpace(k)] = v
	}
	return env, ""
}

func parsePorts(s string) ([]int, string) {
	var ports []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Sprintf("%q is not a port number", f)
		}
		ports = append(ports, n)
	}
	return ports, ""
}

// createCluster is POST /clusters: launch from the page's quote. The form
// token is the idempotency key, so a second submit lands on the same cluster
// and says "already launched as …" (X12).
func (h *handler) createCluster(c echo.Context) error {
	p := principal(c)
	ctx := c.Request().Context()
	var f launchForm
	if err := c.Bind(&f); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "The form could not be read.")
	}
	q, err := h.Store.QuoteForOrg(ctx, p.Org.ID, f.QuoteID)
	if err != nil {
		return err
	}
	view := views.LaunchForm{QuoteID: f.QuoteID, FormToken: f.FormToken, Name: f.Name, Software: f.Software,
		Image: f.Image, StartCommand: f.StartCommand, Env: f.Env, Ports: f.Ports, SSHKeyIDs: f.SSHKeyIDs,
		IdleAction: f.IdleAction, IdleHours: f.IdleHours, Verify: f.verify()}
	problems := map[string]string{}
	var watch *models.WatchPolicy
	if f.IdleAction != "" { // X15: the opt-in idle rule at launch
		w := models.DefaultWatchPolicy()
		w.IdleOn, w.IdleAction = true, f.IdleAction
		if n, err := strconv.Atoi(strings.TrimSpace(f.IdleHours)); err == nil {
			w.IdleHours = n
		} else {
			w.IdleHours = 0
		}
		for k, v := range w.Validate() {
			problems[k] = v
		}
		watch = &w
	}
	env, msg := parseEnvLines(f.Env)
	if msg != "" {
		problems["env"] = msg
	}
	ports, msg := parsePorts(f.Ports)
	if msg != "" {
		problems["ports"] = msg
	}
	if len(f.FormToken) < 16 {
		problems["quote"] = "This form is incomplete; open the launch page again."
	}
	var nc *models.NoCapacityError
	if len(problems) == 0 {
		cl, created, err := h.act(c).Launch(ctx, models.LaunchInput{
			QuoteID: q.ID, SharedQuote: true, IdemKey: "form:" + f.FormToken, RequestHash: formHash(f), SSHKeyIDs: f.SSHKeyIDs,
			Workload: models.Workload{Name: strings.TrimSpace(f.Name), Software: f.Software, Image: strings.TrimSpace(f.Image),
				StartCommand: f.StartCommand, Env: env, Ports: ports},
			Watch:  watch,
			Verify: f.verify(),
		})
		switch {
		case err == nil && created:
			h.kick(c, "provision")
			return redirect(c, "/clusters/"+cl.ID)
		case err == nil, errors.Is(err, models.ErrIdempotencyMismatch) || errors.Is(err, models.ErrQuoteUsed):
			return h.alreadyLaunched(c, q, view, cl, err)
		}
		if !launchProblem(err, problems) {
			return err
		}
		if errors.As(err, &nc) {
			return h.notInStock(c, q, view, problems)
		}
	}
	lp, err := h.launchPage(c, q, view, problems)
	if err != nil {
		return err
	}
	return render(c, http.StatusUnprocessableEntity, views.LaunchPageView(lp))
}

// alreadyLaunched answers a repeated launch form with the cluster it made.
func (h *handler) alreadyLaunched(c echo.Context, q models.Quote, view views.LaunchForm, cl models.Cluster, err error) error {
	if err != nil && q.UsedByCluster != "" { // the earlier launch of this form used the quote
		if cl, err = h.Store.ClusterForOrg(c.Request().Context(), principal(c).Org.ID, q.UsedByCluster); err != nil {
			return err
		}
	}
	lp, lerr := h.launchPage(c, q, view, nil)
	if lerr != nil {
		return lerr
	}
	if cl.ID != "" {
		row := clusterRow(cl, h.Store.Now())
		lp.Already = &row
	}
	return render(c, http.StatusOK, views.LaunchPageView(lp))
}

// launchProblem turns a launch refusal into a form problem; false means it is
// not one the form explains.
func launchProblem(err error, problems map[string]string) bool {
	var fe models.FieldErrors
	var pc *models.PriceChangedError
	var qe *models.QuotaError
	var ib *models.InsufficientBalanceError
	var nc *models.NoCapacityError
	switch {
	case errors.As(err, &fe):
		for k, v := range fe {
			problems[k] = v
		}
		if fe["sshKeyIds"] != "" {
			problems["sshKeyIds"] = "choose your own SSH keys"
		}
		for _, k := range []string{"quoteId", "volumeId"} { // the form shows them with the quote
			if fe[k] != "" && problems["quote"] == "" {
				problems["quote"] = fe[k]
			}
		}
	case errors.As(err, &pc):
		problems["quote"] = "The locked price expired. Go back to the offers to lock a fresh price."
	case errors.As(err, &qe):
		problems["quote"] = fmt.Sprintf("This launch would use %d %s with %d already in use; your organisation's limit is %d. Ask the operator to raise it.",
			qe.Requested, qe.Resource, qe.InUse, qe.Limit)
	case errors.As(err, &ib):
		problems["quote"] = balanceProblem(ib.Admission)
	case errors.As(err, &nc):
		problems["quote"] = notInStockMessage(nc)
	default:
		return false
	}
	return true
}

func formHash(f launchForm) string {
	keys := append([]string(nil), f.SSHKeyIDs...)
	sort.Strings(keys)
	v := url.Values{"q": {f.QuoteID}, "n": {f.Name}, "s": {f.Software}, "i": {f.Image}, "c": {f.StartCommand},
		"e": {f.Env}, "p": {f.Ports}, "k": keys, "ia": {f.IdleAction}, "ih": {f.IdleHours}}
	sum := sha256.Sum256([]byte(v.Encode()))
	return hex.EncodeToString(sum[:])
}

// showCluster is GET /clusters/{id}: the cluster page, or for htmx polling
// only its live part (L11, X3).
func (h *handler) showCluster(c echo.Context) error {
	p := principal(c)
	ctx := c.Request().Context()
	cl, err := h.Store.ClusterForOrg(ctx, p.Org.ID, c.Param("id"))
	if err != nil {
		return err
	}
	cp, err := h.clusterPage(c, cl)
	if err != nil {
		return err
	}
	live := views.ClusterLive(cp)
	if u := cp.Meta.User; cp.Live && u != nil && u.Balance != "" {
		// B1: while the cluster runs and accrues, each poll also brings
		// the header's balance (an out-of-band swap, no request of its own).
		live = templ.Join(live, views.HeaderBalance(u, true))
	}
	return page(c, http.StatusOK, views.ClusterPageView(cp), live)
}

func (h *handler) clusterPage(c echo.Context, cl models.Cluster) (views.ClusterPage, error) {
	ctx := c.Request().Context()
	nodes, err := h.Store.NodesFor(ctx, cl.ID)
	if err != nil {
		return views.ClusterPage{}, err
	}
	events, err := h.Store.EventsFor(ctx, cl.ID)
	if err != nil {
		return views.ClusterPage{}, err
	}
	now := h.Store.Now()
	cp := views.ClusterPage{
		Meta: h.meta(c, cl.Name), C: clusterView(cl),
		Live:         !cl.Status.Terminal(),
		CanTerminate: cl.CanTerminate(),
		Tab:          clusterTab(c.QueryParam("tab")),
		Problem:      problemView(cl, nodes),
		CanResume:    cl.CanResume(),
	}
	if cp.CanResume { // B5: Resume is off, with its reason, while the budget is reached
		br, err := h.Store.BudgetReached(ctx, cl)
		if err != nil {
			return cp, err
		}
		if br != nil {
			f := refusalFlash(budgetReached(br, cl.USDPerHour))
			cp.ResumeBlocked = &f
		}
	}
	if cp.Stop, err = h.stopView(c, cl); err != nil {
		return cp, err
	}
	for _, n := range nodes {
		cp.Nodes = append(cp.Nodes, nodeView(cl, n))
	}
	for _, e := range events {
		cp.Events = append(cp.Events, views.EventView{At: e.At.Format("2 Jan 15:04:05"), When: e.At.Format(time.RFC3339), Kind: e.Kind, Status: e.Status,
			Node: e.Node, Step: e.Step, Message: e.Message})
	}
	cp.RecentEvents = cp.Events[max(len(cp.Events)-recentEvents, 0):]
	for _, t := range views.ClusterTabs {
		cp.Tabs = append(cp.Tabs, views.TabView{ID: t, Label: tabLabels[t], Href: views.TabHref(cl.ID, t), Current: t == cp.Tab})
	}
	if cl.Lifecycle().InstallUnderWay() {
		run, err := h.Store.SoftwareRunStarted(ctx, cl.OrgID, cl.ID)
		if err != nil {
			return cp, err
		}
		cp.Progress = progressView(cl, nodes, run, now)
	} else {
		cp.Progress = progressView(cl, nodes, nil, now)
	}
	if cl.Status.Failed() {
		cp.Alternatives, err = h.alternatives(c, cl)
		if err != nil {
			return cp, err
		}
		if cp.Problem != nil {
			cp.Problem.Advice = failedAdvice(len(cp.Alternatives))
		}
	}
	cp.Recovery = recoveryView(cl, now, nil)
	if cp.Storage, err = h.storageView(c, cl); err != nil {
		return cp, err
	}
	cp.Join = joinView(cl, nodes, cp.Nodes)
	if cp.Ended, err = h.endedView(c, cl); err != nil {
		return cp, err
	}
	if cp.Ended != nil && cl.EndedAt != nil {
		cp.Ended.Ran = ranFor(cl.EndedAt.Sub(cl.CreatedAt))
	}
	if err := h.decorateClusterPage(c, cl, nodes, &cp); err != nil {
		return cp, err
	}
	gpus, err := h.Store.GPUChecks(ctx, cl.OrgID, cl.ID)
	if err != nil {
		return cp, err
	}
	for _, g := range gpus {
		for i := range cp.Nodes {
			if cp.Nodes[i].Rank == g.Rank {
				cp.Nodes[i].GPUs = g.Summary
			}
		}
	}
	nccl, err := h.Store.NCCLCheckFor(ctx, cl.OrgID, cl.ID)
	if err != nil {
		return cp, err
	}
	cp.NCCL = ncclView(cl, nccl)
	if err := h.decorateGPU(c, cl, &cp); err != nil {
		return cp, err
	}
	run, err := h.Store.VerificationFor(ctx, cl.OrgID, cl.ID)
	if err != nil {
		return cp, err
	}
	cp.Verification = verificationView(cl, run)
	if cp.Verification != nil && cp.Verification.CanRerun {
		running, err := h.Store.StartCommandsRunning(ctx, cl.ID)
		if err != nil {
			return cp, err
		}
		cp.Verification.Disruption = cl.VerifyDisruption(running)
	}
	if cl.Lifecycle().Verifying() && cp.Progress != nil {
		verifyProgress(cp.Progress, run, now)
	}
	return cp, nil
}

// recentEvents is how many events the overview shows; the Events section has all.
const recentEvents = 5

var tabLabels = map[string]string{views.TabOverview: "Overview", views.TabConnect: "Connect", views.TabLogs: "Logs", views.TabEvents: "Events"}

// clusterTab reads ?tab=; anything but a known section is the overview.
func clusterTab(q string) string {
	if slices.Contains(views.ClusterTabs, q) {
		return q
	}
	return views.TabOverview
}

// ncclView shows the NCCL check beside what the interconnect advertises (X4).
func ncclView(cl models.Cluster, ch *models.NCCLCheck) *views.NCCLView {
	if ch == nil {
		return nil
	}
	v := &views.NCCLView{State: ch.Status, Warning: ch.Warning, Message: ch.Summary}
	if ch.Status == models.NCCLMeasured {
		v.Measured = nodespec.GBps(ch.BusBW) + " GB/s bus bandwidth"
		v.Percent = fmt.Sprintf("%d %%", ch.Percent)
		v.Expected = fmt.Sprintf("%s GB/s expected from %s at %s per node", nodespec.GBps(ch.ExpectedBusBW),
			views.InterconnectLabel(cl.Interconnect), gbits(ch.AdvertisedGbps))
		switch {
		case ch.AdvertisedGbps == 0: // the hand-over verification's ring (X13)
			v.Expected = fmt.Sprintf("%s GB/s expected of a ring on %s", nodespec.GBps(ch.ExpectedBusBW), views.InterconnectLabel(cl.Interconnect))
		case cl.Interconnect == nodespec.InterconnectEthernet: // the encrypted overlay is held to a floor
			v.Expected = fmt.Sprintf("%s GB/s at least on the encrypted overlay (up to %s per node)", nodespec.GBps(ch.ExpectedBusBW), gbits(ch.AdvertisedGbps))
		}
		v.MeasuredAt = clock(ch.FinishedAt)
	}
	return v
}

// gbits formats Gbit/s: "2 Gbit/s", "3.2 Tbit/s".
func gbits(g int) string {
	if g >= 1000 {
		return strconv.FormatFloat(float64(g)/1000, 'f', -1, 64) + " Tbit/s"
	}
	return strconv.Itoa(g) + " Gbit/s"
}

func clusterView(cl models.Cluster) views.ClusterView {
	v := views.ClusterView{
		ID: cl.ID, Name: cl.Name, Status: string(cl.Status),
		Shape:    views.Shape(cl.Nodes, cl.GPUsPerNode, cl.Accelerator),
		Location: cl.LocationName, Interconnect: views.InterconnectLabel(cl.Interconnect), Kind: views.KindLabel(cl.MachineKind),
		Price: models.PriceUSD(cl.USDPerHour) + "/h", MachinePrice: models.PriceUSD(cl.MachineHour) + "/h",
		ReadyAt: "not yet", LastError: cl.LastError, Software: cl.SoftwareLabel(),
		Created:     cl.CreatedAt.Format(time.RFC3339),
		Terminating: cl.Terminating(),
	}
	if cl.ReadyAt != nil {
		v.ReadyAt = cl.ReadyAt.Format("15:04:05 MST, 2 Jan")
	} else if cl.Ending() {
		v.ReadyAt = "never" // it ends without having been billed (B2)
	}
	if cl.BillFrom != nil {
		v.ReadyAt = cl.BillFrom.Format("15:04:05 MST, 2 Jan") + " (resumed)"
		if cl.Resumes == 0 {
			v.ReadyAt = cl.BillFrom.Format("15:04:05 MST, 2 Jan") + " (hand-over)"
		}
	}
	switch { // X13: verification and its swaps are not billed
	case !cl.BillingHeld():
	case cl.Ending():
		v.ReadyAt = "not billed since " + cl.UnbilledAt.Format("15:04:05 MST, 2 Jan")
	case cl.Lifecycle().VerifyingOrStoppedVerifying():
		v.ReadyAt = "at hand-over (verification is not billed)"
	default:
		v.ReadyAt = "not billed until you keep it"
	}
	if cl.Lifecycle().StoppedAtProvider() {
		v.BillingLabel = "Billing" // not "Billing since": it is not billing
		v.ReadyAt = "stopped since " + cl.StoppedAt.Format("15:04:05 MST, 2 Jan")
	}
	v.Stop = stopLine(cl)
	return v
}

// stopLine says what a stop or resume is doing to the cluster (B6).
func stopLine(cl models.Cluster) string {
	why := ""
	switch models.StopReason(cl.StopReason) {
	case models.StopByBalance:
		why = " because the balance ran out"
	case models.StopByBudget:
		why = " because the environment's budget was reached"
	case models.StopByIdle:
		why = " because every GPU sat idle past the cluster's idle rule"
	case models.StopByCustomer:
		why = " as asked (" + strings.TrimSuffix(cl.StopDetail, ".") + ")"
	}
	switch {
	case cl.Ending():
		return ""
	case cl.Resuming():
		return "Resuming: every machine is starting again with the launch's step deadlines, all or nothing. Billing restarts when all of them have joined."
	case cl.Lifecycle().RestoppingAfterFailedResume():
		return "Stopped. The machines a failed resume started are being stopped again; resume once they are."
	case cl.Lifecycle().Stopped():
		at := ""
		if cl.StoppedAt != nil {
			at = " at " + cl.StoppedAt.Format("15:04 MST, 2 Jan")
		}
		return "Stopped" + at + why + ": every machine is stopped at the provider and compute billing ended; nothing is deleted. " +
			"Resume starts every machine again (it needs the balance a launch needs; add funds on the billing page)."
	case cl.Stopping():
		return "Stopping" + why + ": every machine is being stopped at the provider; compute billing ends when they are."
	}
	return ""
}

// nodeView is one node: its status as the cluster page says it (derived
// from the cluster's status and the node's step, L8), and its timeline: each
// step done (with when), the one it waits for (with when the cluster gives
// up on it), or failed (X3, L11).
func nodeView(cl models.Cluster, n models.ClusterNode) views.NodeView {
	shown := models.ShownNodeStatus(cl, n)
	nv := views.NodeView{Name: n.Name, Rank: n.Rank, Status: string(shown), Detail: nodeDetail(cl, n, shown),
		Address: n.PrivateIP, Message: n.Message}
	placed, joining := cl.PlacedAt, n.Status.Joining()
	if joining && n.JoinPlacedAt == nil {
		// A replacement not placed yet: the row still holds the old
		// machine's steps, which are not this machine's (X5, X13).
		n.RunningAt, n.AgentAt, n.MeshAt, n.SoftwareAt = nil, nil, nil, nil
	}
	stamp := map[string]*time.Time{models.StepRunning: n.RunningAt, models.StepAgent: n.AgentAt, models.StepMesh: n.MeshAt}
	labels := map[string]string{models.StepRunning: "booting", models.StepAgent: "agent", models.StepMesh: "mesh"}
	if joining || n.JoinPlacedAt != nil { // an added worker or a replacement: its own placement and deadlines (L10, X5)
		placed = n.JoinPlacedAt
	}
	nv.Steps = append(nv.Steps, views.StepView{Label: "reserved", State: stateIf(placed != nil, "done", "active"), At: clock(placed)})
	for _, step := range models.ProvisionSteps {
		sv := views.StepView{Label: labels[step], State: "waiting"}
		deadline := cl.StepDeadline(step)
		if joining {
			deadline = cl.JoinDeadline(n, step)
		}
		switch {
		case stamp[step] != nil:
			sv.State, sv.At = "done", clock(stamp[step])
		case n.Step == step && shown.StepFailed():
			sv.State = "failed"
		case n.Step == step && shown.TakingSteps() && !deadline.IsZero():
			sv.State = "active"
			sv.Deadline = "gives up at " + deadline.Format("15:04:05")
		}
		nv.Steps = append(nv.Steps, sv)
	}
	if cl.Software != "" && cl.Software != "none" {
		sv := views.StepView{Label: cl.Software, State: "waiting"}
		switch {
		case n.SoftwareAt != nil:
			sv.State, sv.At = "done", clock(n.SoftwareAt)
		case shown.Installing() || shown.Joining() && n.MeshAt != nil:
			sv.State = "active"
		case shown.SoftwareFailed():
			sv.State = "failed"
		}
		nv.Steps = append(nv.Steps, sv)
	}
	return nv
}

func stateIf(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

func clock(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.Format("15:04:05")
}

// alternatives are offers that can start now for a failed cluster's shape (L4).
func (h *handler) alternatives(c echo.Context, cl models.Cluster) ([]views.OfferAlternative, error) {
	groups, err := h.Store.PickOffers(c.Request().Context(), models.OfferFilter{Accelerator: cl.Accelerator, Nodes: cl.Nodes, GPUsPerNode: cl.GPUsPerNode})
	if err != nil {
		return nil, err
	}
	var out []views.OfferAlternative
	for _, g := range groups {
		for _, o := range g.Offers {
			if o.SellFor(cl.Nodes) != models.Startable || len(out) >= 5 {
				continue
			}
			out = append(out, views.OfferAlternative{
				Label:     fmt.Sprintf("%s · %s · %s", o.LocationName, views.InterconnectLabel(o.Interconnect), views.KindLabel(o.MachineKind)),
				Price:     models.PriceUSD(o.ClusterHour(cl.Nodes)) + "/h",
				LaunchURL: "/clusters/new?" + url.Values{"offer": {o.ID}, "nodes": {strconv.Itoa(cl.Nodes)}}.Encode(),
			})
		}
	}
	return out, nil
}

// requestTerminate records the intent to terminate the caller's cluster
// (L7) and wakes the terminate job, which releases every machine together.
// The page and the API answer it each their own way.
func (h *handler) requestTerminate(c echo.Context) (models.Cluster, error) {
	cl, err := h.act(c).Terminate(c.Request().Context(), c.Param("id"))
	if err != nil {
		return cl, err
	}
	h.kick(c, "terminate")
	return cl, nil
}

// terminateCluster is POST /clusters/{id}/terminate (L7).
func (h *handler) terminateCluster(c echo.Context) error {
	cl, err := h.requestTerminate(c)
	if err != nil {
		return err
	}
	if isPartial(c) {
		cp, err := h.clusterPage(c, cl)
		if err != nil {
			return err
		}
		return render(c, http.StatusOK, views.ClusterLive(cp))
	}
	return redirect(c, "/clusters/"+cl.ID)
}

// kick runs a job's tick soon, so the customer does not wait for the next
// scheduled one. Jobs stay the only code that calls providers, and the
// scheduler owns the tick (it stops with the server).
func (h *handler) kick(c echo.Context, job string) {
	if h.Jobs != nil {
		h.Jobs.Kick(job)
	}
}
