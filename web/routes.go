package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// routes registers every route. Reading this function tells every URL the
// product answers.
func (h *handler) routes(e *echo.Echo) {
	e.GET("/healthz", h.healthz)
	e.GET("/readyz", h.readyz)
	e.GET("/", func(c echo.Context) error { return c.Redirect(http.StatusSeeOther, "/offers") })
	e.StaticFS("/static", h.Static)

	// Pages and their htmx partials.
	e.GET("/offers", h.listOffers)

	// The cluster agent's protocol (node tokens, outside the customer API).
	h.agentRoutes(e)

	// REST API v1.
	v1 := e.Group("/v1")
	v1.GET("/gpu/offers", h.apiListOffers)

	// Development-only routes: never registered in production.
	if !h.Config.Production {
		dev := e.Group("/dev")
		dev.GET("/clock", h.devClock)
		dev.POST("/clock", h.devAdvanceClock)
		dev.POST("/jobs/:name/run", h.devRunJob)
		dev.POST("/sim/faults", h.devSimFaults)
	}
}
