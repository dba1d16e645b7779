package web

import (
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// decorateGPU adds the GPU watch panel (X15) to the cluster page.
func (h *handler) decorateGPU(c echo.Context, cl models.Cluster, cp *views.ClusterPage) error {
	w, err := h.Store.GPUWatchFor(c.Request().Context(), cl.OrgID, cl.ID)
	if err != nil {
		return err
	}
	cp.Watch = watchView(cl, w, nil)
	return nil
}
