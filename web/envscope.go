package web

import (
	"fmt"
	"strings"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

// An API key is made for one environment and acts there only (A3,
// A3): another environment's clusters, quotes and quote requests answer 404,
// exactly like another organisation's. A dashboard session sees the whole
// organisation, as its pages do.

// keyEnvScope runs after a bearer key authenticates: for a route that names
// an object by :id it loads the object and refuses it unless it belongs to
// the key's environment.
func (h *handler) keyEnvScope(c echo.Context) error {
	p := principal(c)
	if p == nil || p.APIKeyID == "" || c.Param("id") == "" {
		return nil
	}
	ctx, id := c.Request().Context(), c.Param("id")
	var env string
	switch path := c.Path(); {
	case strings.HasPrefix(path, "/v1/gpu/clusters/:id"):
		cl, err := h.Store.ClusterForOrg(ctx, p.Org.ID, id)
		if err != nil {
			return err
		}
		env = cl.EnvID
	case strings.HasPrefix(path, "/v1/reservations/:id"): // X18
		r, err := h.Store.ReservationForOrg(ctx, p.Org.ID, id)
		if err != nil {
			return err
		}
		env = r.EnvID
	case strings.HasPrefix(path, "/v1/quote-requests/:id"):
		r, err := h.Store.QuoteRequestForOrg(ctx, p.Org.ID, id)
		if err != nil {
			return err
		}
		env = r.EnvID
	default:
		return nil
	}
	return checkKeyEnv(p, env, id)
}

// checkKeyEnv is the 404 for an object of envID seen through p's key.
func checkKeyEnv(p *Principal, envID, id string) error {
	if p.APIKeyID != "" && envID != p.Env.ID {
		return fmt.Errorf("web: %s is in another environment than the API key: %w", id, models.ErrNotFound)
	}
	return nil
}

// inKeyEnv keeps the items of p's key's environment (all of them for a
// dashboard session).
func inKeyEnv[T any](p *Principal, items []T, envOf func(T) string) []T {
	if p.APIKeyID == "" {
		return items
	}
	out := items[:0:0]
	for _, it := range items {
		if envOf(it) == p.Env.ID {
			out = append(out, it)
		}
	}
	return out
}
