package web

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// requestStop records the customer's stop of a ready cluster (B6, L8) and
// wakes the stop job: a provider that cannot stop machines answers 409
// stop_unsupported with its reason; anything but a ready or degraded
// cluster with nothing under way answers 409 not_running.
func (h *handler) requestStop(c echo.Context) (models.Cluster, error) {
	cl, err := h.act(c).Stop(c.Request().Context(), c.Param("id"))
	var su *models.StopUnsupportedError
	switch {
	case errors.As(err, &su):
		return cl, &APIError{Status: http.StatusConflict, Code: "stop_unsupported", Message: su.Reason,
			Extra: map[string]any{"reason": "provider_cannot_stop", "provider": su.Provider}}
	case errors.Is(err, models.ErrConflict):
		return cl, &APIError{Status: http.StatusConflict, Code: "not_running",
			Message: fmt.Sprintf("Only a ready or degraded cluster with nothing under way can be stopped; %s is %s. "+
				"A cluster still starting can be terminated, or stopped once it is ready.", cl.Name, statusWord(cl))}
	case err != nil:
		return cl, err
	}
	h.kick(c, "stop")
	return cl, nil
}

func statusWord(cl models.Cluster) string {
	switch {
	case cl.Ending():
		return "being terminated"
	case cl.Stopping():
		return "being stopped"
	case cl.Resuming():
		return "resuming"
	}
	return string(cl.Status)
}

// stopCluster is POST /clusters/{id}/stop, the cluster page's button: back
// to the cluster page, a refusal said on top.
func (h *handler) stopCluster(c echo.Context) error {
	cl, err := h.requestStop(c)
	if err != nil {
		ae := classify(err)
		if cl.ID == "" || ae.Status >= 500 || isPartial(c) {
			return err
		}
		_ = h.flash(c, views.FlashError, encodeFlash(refusalFlash(ae)))
	}
	return redirect(c, "/clusters/"+cl.ID)
}

// apiStop is POST /v1/gpu/clusters/{id}/stop (B6): 202, the stop job stops
// every machine; the cluster is stopped once all are.
func (h *handler) apiStop(c echo.Context) error {
	cl, err := h.requestStop(c)
	if err != nil {
		return err
	}
	return h.clusterJSONResponse(c, http.StatusAccepted, cl)
}

// stopView is the page's Stop: on with what the confirm says (what ends,
// what keeps billing), off with the provider's reason, absent when the
// cluster is not ready or degraded.
func (h *handler) stopView(c echo.Context, cl models.Cluster) (*views.StopView, error) {
	if !cl.Stoppable() {
		return nil, nil
	}
	if why := h.Store.StopRefusal(cl.Provider); why != "" {
		return &views.StopView{Refused: "Stop is off: " + why}, nil
	}
	v, err := h.Store.VolumeOfCluster(c.Request().Context(), cl)
	if err != nil {
		return nil, err
	}
	return &views.StopView{Title: "Stop " + cl.Name + "?", Detail: stopConsequence(cl, v)}, nil
}

// stopConsequence says what a stop does and what keeps billing while the
// cluster is stopped (the confirm and docs/billing.md say the same).
func stopConsequence(cl models.Cluster, v *models.Volume) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Every machine is stopped at %s: running processes end; files on the machines' disks are kept. "+
		"Compute billing (%s/h) ends once all are stopped. ", providerLabel(cl.Provider), models.PriceUSD(cl.USDPerHour))
	if v != nil && v.DeletedAt == nil {
		fmt.Fprintf(&b, "Still billed while stopped: the volume %s (%d GB) at %s/h. ", v.Name, v.SizeGB, models.PriceUSD(v.HourRate()))
	} else {
		b.WriteString("Nothing else bills while it is stopped: the machines' disks are kept at no charge to you. ")
	}
	b.WriteString("Resume starts every machine again, all or nothing, and needs the balance a launch needs.")
	return b.String()
}

// providerLabel names the provider in a sentence.
func providerLabel(p string) string {
	switch p {
	case "sim":
		return "the simulated cloud"
	case "runpod":
		return "RunPod"
	}
	return p
}
