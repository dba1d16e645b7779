package web

import (
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

// actor is who the request acts as, for the use cases in models.
func actor(c echo.Context) models.Actor {
	a := models.Actor{IP: c.RealIP()}
	if p := principal(c); p != nil {
		a.OrgID, a.EnvID, a.UserID, a.Role, a.Name = p.Org.ID, p.Env.ID, p.UserID, p.Role, p.Actor
	}
	return a
}

// act returns the use cases as the request's actor: handlers bind the
// input, make one call and render its answer.
func (h *handler) act(c echo.Context) models.Actions { return h.Store.As(actor(c)) }
