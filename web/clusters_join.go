package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// joinView offers "Add worker" on a ready cluster and "Replace" on each
// down machine (L10, X5), with the machine-hour price, while nothing joins;
// it marks the replaceable rows of views.
func joinView(cl models.Cluster, nodes []models.ClusterNode, rows []views.NodeView) *views.JoinView {
	lc := cl.Lifecycle()
	if !lc.JoinsOffered() {
		return nil
	}
	v := &views.JoinView{MachineHour: models.PriceUSD(cl.JoinPrice()) + "/h", NextNode: fmt.Sprintf("node-%d", cl.Nodes)}
	for _, n := range nodes {
		if n.JoinKind != "" {
			v.Joining = n.Name
		}
	}
	v.CanAdd = lc.CanAddWorker() && v.Joining == ""
	for i := range rows {
		for _, n := range nodes {
			if n.Rank == rows[i].Rank && lc.CanReplace(n.Status) && v.Joining == "" {
				rows[i].CanReplace = true
			}
		}
	}
	return v
}

// joinError maps the refusals of adding a worker or replacing a machine
// (L10, X5) onto the API's codes: admission as for a launch (L2), a join
// already under way, a cluster or machine in the wrong state.
func joinError(err error) error {
	switch {
	case errors.Is(err, models.ErrJoinInProgress):
		return &APIError{Status: http.StatusConflict, Code: "join_in_progress",
			Message: "A machine is already joining this cluster: wait until it has joined or failed."}
	case errors.Is(err, models.ErrNotJoinable):
		return &APIError{Status: http.StatusConflict, Code: "not_ready", Message: "A worker can be added to a ready cluster only."}
	case errors.Is(err, models.ErrJoinStopping):
		return &APIError{Status: http.StatusConflict, Code: "stopping",
			Message: "The cluster is being stopped (balance or budget): add or replace machines once it runs again."}
	case errors.Is(err, models.ErrNotReplaceable):
		return &APIError{Status: http.StatusConflict, Code: "not_replaceable",
			Message: "Only a machine that is down can be replaced (its status reads down)."}
	}
	return launchError(err)
}

// requestWorker admits one more machine and wakes the join job (L10).
func (h *handler) requestWorker(c echo.Context) (models.Cluster, error) {
	cl, _, err := h.act(c).AddWorker(c.Request().Context(), c.Param("id"))
	if err != nil {
		return cl, joinError(err)
	}
	h.kick(c, "join")
	return cl, nil
}

// addWorker is POST /clusters/{id}/workers: the page's "Add worker".
func (h *handler) addWorker(c echo.Context) error {
	cl, err := h.requestWorker(c)
	if err != nil {
		return err
	}
	return redirect(c, "/clusters/"+cl.ID)
}

// apiAddWorker is POST /v1/gpu/clusters/{id}/workers (L10): 202, the join
// job places the machine; the node reads joining until it joined.
func (h *handler) apiAddWorker(c echo.Context) error {
	cl, err := h.requestWorker(c)
	if err != nil {
		return err
	}
	return h.clusterJSONResponse(c, http.StatusAccepted, cl)
}

// rankParam reads {rank}; anything but a whole number is a 404 like an
// unknown node.
func rankParam(c echo.Context) (int, error) {
	rank, err := strconv.Atoi(c.Param("rank"))
	if err != nil || rank < 0 || rank > models.MaxNodes {
		return 0, fmt.Errorf("node %q: %w", c.Param("rank"), models.ErrNotFound)
	}
	return rank, nil
}

// replacePreview is what replacing node rank costs, before it is confirmed.
func (h *handler) replacePreview(c echo.Context, rank int) (api.ReplacePreview, error) {
	ctx := c.Request().Context()
	cl, err := h.Store.ClusterForOrg(ctx, principal(c).Org.ID, c.Param("id"))
	if err != nil {
		return api.ReplacePreview{}, err
	}
	nodes, err := h.Store.NodesFor(ctx, cl.ID)
	if err != nil {
		return api.ReplacePreview{}, err
	}
	for _, n := range nodes {
		if n.Rank != rank {
			continue
		}
		if !cl.Lifecycle().CanReplace(n.Status) {
			return api.ReplacePreview{}, joinError(models.ErrNotReplaceable)
		}
		price := models.DecimalUSD(cl.JoinPrice())
		return api.ReplacePreview{Cluster: cl.ID, Node: n.Name, Rank: n.Rank, Address: n.PrivateIP, USDPerMachineHour: price,
			Message: fmt.Sprintf("A new %d × %s machine in %s replaces %s with the same name and address, at $%s per machine-hour on the same billing line, billed from when it has joined. Send confirm: true to go ahead.",
				cl.GPUsPerNode, cl.Accelerator, cl.Location, n.Name, price)}, nil
	}
	return api.ReplacePreview{}, fmt.Errorf("node-%d: %w", rank, models.ErrNotFound)
}

// replaceNode is POST /clusters/{id}/nodes/{rank}/replace: the page's
// "Replace", confirmed in the browser with the machine-hour price.
func (h *handler) replaceNode(c echo.Context) error {
	rank, err := rankParam(c)
	if err != nil {
		return err
	}
	if _, err := h.replacePreview(c, rank); err != nil {
		return err // another organisation's cluster is not found, whatever the form says
	}
	if c.FormValue("confirm") != "1" {
		return invalid(models.FieldErrors{"confirm": "Confirm the replacement and its machine-hour price."})
	}
	cl, _, err := h.act(c).ReplaceNode(c.Request().Context(), c.Param("id"), rank)
	if err != nil {
		return joinError(err)
	}
	h.kick(c, "join")
	return redirect(c, "/clusters/"+cl.ID)
}

// apiReplaceNode is POST /v1/gpu/clusters/{id}/nodes/{rank}/replace (X5):
// without confirm, 200 with the price to confirm and nothing changes; with
// confirm, 202 and the join job places the new machine.
func (h *handler) apiReplaceNode(c echo.Context) error {
	rank, err := rankParam(c)
	if err != nil {
		return err
	}
	var body api.ReplaceBody // read first: a mistyped body is a 422 whatever the node's state
	if c.Request().ContentLength != 0 {
		if _, err := decodeJSON(c, &body); err != nil {
			return err
		}
	}
	preview, err := h.replacePreview(c, rank)
	if err != nil {
		return err
	}
	if !body.Confirm {
		return c.JSON(http.StatusOK, preview)
	}
	cl, _, err := h.act(c).ReplaceNode(c.Request().Context(), c.Param("id"), rank)
	if err != nil {
		return joinError(err)
	}
	h.kick(c, "join")
	return h.clusterJSONResponse(c, http.StatusAccepted, cl)
}
