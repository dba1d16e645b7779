package web

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// requestResume records the resume of a stopped cluster (B6) and wakes the
// stop job: a balance that does not pass launch admission (L2) answers 402
// insufficient_balance with how much to add and where; quotas answer 403
// quota_exceeded; anything but a stopped cluster answers 409 not_stopped.
func (h *handler) requestResume(c echo.Context) (models.Cluster, error) {
	cl, err := h.act(c).Resume(c.Request().Context(), c.Param("id"))
	var ib *models.InsufficientBalanceError
	var qe *models.QuotaError
	var br *models.BudgetReachedError
	switch {
	case errors.As(err, &br): // B5, with the budget that runs this cluster another hour
		return cl, budgetReached(br, cl.USDPerHour)
	case errors.As(err, &ib):
		ae := insufficientBalance(ib)
		ae.Message = "Resuming needs the balance a launch needs. " + ae.Message
		return cl, ae
	case errors.As(err, &qe):
		return cl, &APIError{Status: http.StatusForbidden, Code: "quota_exceeded",
			Message: fmt.Sprintf("Resuming needs %d %s; %d are in use and the limit is %d. Ask the operator to raise your organisation's limits.",
				qe.Requested, qe.Resource, qe.InUse, qe.Limit),
			Extra: map[string]any{"resource": qe.Resource, "limit": qe.Limit, "inUse": qe.InUse, "requested": qe.Requested}}
	case errors.Is(err, models.ErrConflict):
		return cl, &APIError{Status: http.StatusConflict, Code: "not_stopped",
			Message: "Only a stopped cluster whose machines are all stopped can be resumed (not one being terminated)."}
	case err != nil:
		return cl, err
	}
	h.kick(c, "stop")
	return cl, nil
}

// resumeCluster is POST /clusters/{id}/resume, the cluster page's button:
// a refusal goes back to the cluster page with the way forward on top
// (errorHandler's keepInPlace), never an error page left on …/resume.
func (h *handler) resumeCluster(c echo.Context) error {
	cl, err := h.requestResume(c)
	if err != nil {
		ae := classify(err)
		if cl.ID == "" || ae.Status >= 500 || isPartial(c) {
			return err
		}
		_ = h.flash(c, views.FlashError, encodeFlash(refusalFlash(ae)))
		return redirect(c, "/clusters/"+cl.ID)
	}
	return redirect(c, "/clusters/"+cl.ID)
}

// apiResume is POST /v1/gpu/clusters/{id}/resume (B6): 202, the stop job
// starts every machine; the cluster stays stopped until all joined.
func (h *handler) apiResume(c echo.Context) error {
	cl, err := h.requestResume(c)
	if err != nil {
		return err
	}
	return h.clusterJSONResponse(c, http.StatusAccepted, cl)
}
