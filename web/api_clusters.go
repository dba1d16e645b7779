package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

// quoteBody is POST /v1/gpu/clusters/quote's body (api.QuoteBody), with
// the server's reading of it. Launch bodies may repeat these priced fields (Q5).
type quoteBody api.QuoteBody

// fields are the body's priced fields as sent.
func (b quoteBody) fields() models.QuoteFields {
	f := models.QuoteFields{Accelerator: b.Accelerator, Nodes: b.Nodes, GPUsPerNode: b.GPUsPerNode,
		MaxHourlyPrice: b.MaxHourlyPrice, Location: b.Location, OfferID: b.OfferID, IncludeCommunity: b.IncludeCommunity,
		PrivateOfferID: b.PrivateOfferID, VolumeID: b.VolumeID}
	if b.Storage != nil {
		f.VolumeGB = b.Storage.PersistentGB
	}
	return f
}

func toQuoteJSON(q models.Quote) api.Quote {
	j := api.Quote{
		ID: q.ID, Accelerator: q.Accelerator, Nodes: q.Nodes, GPUsPerNode: q.GPUsPerNode,
		Storage: map[string]int{"persistentGb": q.VolumeGB}, Location: q.Location, OfferID: q.OfferID,
		Provider: q.Provider, MachineKind: q.MachineKind, Interconnect: q.Interconnect, IncludeCommunity: q.IncludeCommunity,
		USDPerHour: models.DecimalUSD(q.USDPerHour), USDPerMachineHour: models.DecimalUSD(q.MachineHour()),
		PerGPUUSDPerHour: models.DecimalUSD(q.PerGPUHour), DiskGBPerNode: q.RootDiskGB, RootDiskRate: models.DecimalUSD(q.DiskGBHour),
		Availability: q.Availability, ExpiresAt: q.ExpiresAt, PrivateOfferID: q.PrivateOfferID, VolumeID: q.VolumeID,
	}
	if q.MaxHourlyPrice > 0 {
		s := models.DecimalUSD(q.MaxHourlyPrice)
		j.MaxHourlyPrice = &s
	}
	for _, li := range q.LineItems() {
		j.LineItems = append(j.LineItems, api.LineItem{Name: li.Name, Quantity: li.Quantity, USDPerHour: models.DecimalUSD(li.USDPerHour)})
	}
	return j
}

// noCapacity is Q4's 409 with reason, shape and advice.
func noCapacity(nc *models.NoCapacityError) *APIError {
	shape := api.Shape{Accelerator: nc.Shape.Accelerator, Nodes: nc.Shape.Nodes, GPUsPerNode: nc.Shape.GPUsPerNode,
		Storage: api.ShapeStorage{PersistentGB: nc.Shape.VolumeGB}, IncludeCommunity: nc.Shape.IncludeCommunity,
		Location: nc.Shape.Location, OfferID: nc.Shape.OfferID}
	if nc.Shape.MaxHourlyPrice > 0 {
		shape.MaxHourlyPrice = models.DecimalUSD(nc.Shape.MaxHourlyPrice)
	}
	ae := &APIError{Status: http.StatusConflict, Code: "no_capacity",
		Message: "No offer can start this shape now: " + strings.ReplaceAll(nc.Reason, "_", " ") + ".",
		Extra:   map[string]any{"reason": nc.Reason, "shape": shape, "advice": nc.Advice()}}
	if nc.Reason == models.CatalogStaleReason {
		ae.Message = "No offer can start this shape now: its prices are being refreshed (the provider did not answer recently). Try again in a few minutes."
	}
	if nc.Free != nil {
		ae.Message = notInStockMessage(nc)
		ae.Extra["nodes_available"] = *nc.Free
	}
	return ae
}

// launchError maps launch refusals onto API2's codes.
func launchError(err error) error {
	var nc *models.NoCapacityError
	var pc *models.PriceChangedError
	var qe *models.QuotaError
	var ib *models.InsufficientBalanceError
	switch {
	case errors.As(err, &nc):
		return noCapacity(nc)
	case errors.As(err, &pc):
		extra := map[string]any{"reason": pc.Reason, "old": toQuoteJSON(pc.Old)}
		if pc.New != nil {
			extra["new"] = toQuoteJSON(*pc.New)
		}
		return &APIError{Status: http.StatusConflict, Code: "price_changed",
			Message: "The price is no longer the one quoted (" + pc.Reason + "). Request a fresh quote.", Extra: extra}
	case errors.As(err, &qe):
		return &APIError{Status: http.StatusForbidden, Code: "quota_exceeded",
			Message: fmt.Sprintf("This launch needs %d %s; %d are in use and the limit is %d. Ask the operator to raise your organisation's limits.", qe.Requested, qe.Resource, qe.InUse, qe.Limit),
			Extra:   map[string]any{"resource": qe.Resource, "limit": qe.Limit, "inUse": qe.InUse, "requested": qe.Requested}}
	case errors.As(err, &ib):
		return insufficientBalance(ib)
	case errors.Is(err, models.ErrIdempotencyMismatch):
		return &APIError{Status: http.StatusConflict, Code: "idempotency_key_reused", Message: "This Idempotency-Key was used with a different request body."}
	case errors.Is(err, models.ErrQuoteUsed):
		return &APIError{Status: http.StatusConflict, Code: "quote_used", Message: "This quote already launched a cluster; request a new quote."}
	}
	return err
}

// apiQuote is POST /v1/gpu/clusters/quote (Q1–Q4).
func (h *handler) apiQuote(c echo.Context) error {
	p := principal(c)
	var body quoteBody
	if _, err := decodeJSON(c, &body); err != nil {
		return err
	}
	r, fe := body.fields().Request()
	if len(fe) > 0 {
		return invalid(fe)
	}
	q, err := h.Store.CreateQuote(c.Request().Context(), p.Org.ID, p.Env.ID, r)
	if err != nil {
		return launchError(err)
	}
	return c.JSON(http.StatusCreated, toQuoteJSON(q))
}

// launchBody is POST /v1/gpu/clusters (api.LaunchBody): a quote id (or an
// offer and a size) and the workload. Priced fields may be repeated; a
// different value than the quote's answers price_changed (Q5).
type launchBody api.LaunchBody

// dialect reads the software and the start command under either seed's
// name (API4): AI Reserve's orchestrator and dockerStartCmd are ours
// software and startCommand. Both names with different values is refused,
// naming both, rather than one silently winning.
func (b launchBody) dialect() (software, startCommand string, fe models.FieldErrors) {
	fe = models.FieldErrors{}
	software = oneOf(fe, "software", b.Software, "orchestrator", b.Orchestrator)
	startCommand = oneOf(fe, "startCommand", b.StartCommand, "dockerStartCmd", b.DockerStartCmd)
	return software, startCommand, fe
}

// oneOf is the value sent under ours or theirs, the two names of one field.
func oneOf(fe models.FieldErrors, ours, a, theirs, b string) string {
	switch {
	case a == "" || a == b:
		return b
	case b == "":
		return a
	}
	fe[ours] = fmt.Sprintf("differs from %s: they are the same field (%s is AI Reserve's name); send one, or the same value in both", theirs, theirs)
	fe[theirs] = fmt.Sprintf("differs from %s: they are the same field; send one, or the same value in both", ours)
	return a
}

// apiLaunch is POST /v1/gpu/clusters with an Idempotency-Key header (L1).
func (h *handler) apiLaunch(c echo.Context) error {
	var body launchBody
	raw, err := decodeJSON(c, &body)
	if err != nil {
		return err
	}
	key := strings.TrimSpace(c.Request().Header.Get("Idempotency-Key"))
	if len(key) > 191 {
		return invalid(models.FieldErrors{"Idempotency-Key": "at most 191 characters"})
	}
	software, startCommand, fe := body.dialect()
	watch := launchWatch(body.GPUWatch)
	if watch != nil {
		for k, v := range prefixed(watch.Validate(), "gpuWatch.") {
			fe[k] = v
		}
	}
	if len(fe) > 0 {
		return invalid(fe)
	}
	sum := sha256.Sum256(raw)
	cl, created, err := h.act(c).Launch(c.Request().Context(), models.LaunchInput{
		QuoteID: body.QuoteID, Priced: quoteBody(body.QuoteBody).fields(), FreshQuote: true, DefaultName: true,
		OwnEnvQuote: principal(c).APIKeyID != "",
		IdemKey:     key, RequestHash: hex.EncodeToString(sum[:]), SSHKeyIDs: body.SSHKeyIDs,
		Workload: models.Workload{Name: body.Name, Software: software, Image: body.Image,
			StartCommand: startCommand, Env: body.Env, Ports: body.Ports},
		Watch:  watch,
		Verify: body.Verify == nil || *body.Verify, // X13: on unless `verify: false`
	})
	if err != nil {
		return launchError(err)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		h.kick(c, "provision")
	}
	return h.clusterJSONResponse(c, status, cl)
}

func toClusterJSON(cl models.Cluster, nodes []models.ClusterNode, events []models.ClusterEvent, starts map[int]*models.NodeStart) api.Cluster {
	j := api.Cluster{
		ID: cl.ID, Name: cl.Name, Status: string(cl.Status), Accelerator: cl.Accelerator, NodeCount: cl.Nodes,
		GPUsPerNode: cl.GPUsPerNode, Location: cl.Location, Provider: cl.Provider, OfferID: cl.OfferID, QuoteID: cl.QuoteID,
		MachineKind: cl.MachineKind, Interconnect: cl.Interconnect, Software: cl.Software,
		USDPerHour: models.DecimalUSD(cl.USDPerHour), USDPerMachineHour: models.DecimalUSD(cl.MachineHour),
		ReadyAt: cl.ReadyAt, CreatedAt: cl.CreatedAt, TerminateRequestedAt: cl.TerminateRequestedAt, EndedAt: cl.EndedAt,
		Nodes: []api.ClusterNode{}, Recovery: toRecoveryJSON(cl.Recovery()),
	}
	if cl.LastError != "" {
		j.LastError = &cl.LastError
	}
	if !cl.Status.Terminal() { // B6: the stop and resume under way, or the stop in force
		j.StopRequestedAt, j.ResumeRequestedAt = cl.StopRequestedAt, cl.ResumeRequestedAt
		if cl.Lifecycle().StopInForceOrAsked() {
			j.StopReason, j.StoppedAt = cl.StopReason, cl.StoppedAt
		}
	}
	for _, n := range nodes {
		j.Nodes = append(j.Nodes, api.ClusterNode{Name: n.Name, Rank: n.Rank, Status: string(n.Status), Step: n.Step, Address: n.PrivateIP, PublicHost: n.PublicHost,
			Message: n.Message, StartCommand: startJSON(cl, n, starts[n.Rank])})
	}
	for _, e := range events {
		j.Events = append(j.Events, api.ClusterEvent{At: e.At, Kind: e.Kind, Status: e.Status, Node: e.Node, Step: e.Step, Message: e.Message})
	}
	return j
}

// toNCCLJSON is the automatic NCCL check (X4) beside what the interconnect
// advertises; nil before the cluster is ready.
func toNCCLJSON(ch *models.NCCLCheck) *api.NCCLCheck {
	if ch == nil {
		return nil
	}
	j := &api.NCCLCheck{Status: ch.Status, Warning: ch.Warning, Summary: ch.Summary}
	if ch.Status == models.NCCLMeasured {
		j.BusBandwidthGBps, j.ExpectedBusBandwidthGBps = &ch.BusBW, &ch.ExpectedBusBW
		j.AdvertisedGbpsPerNode, j.PercentOfExpected, j.MeasuredAt = &ch.AdvertisedGbps, &ch.Percent, ch.FinishedAt
	}
	return j
}

func (h *handler) clusterJSONResponse(c echo.Context, status int, cl models.Cluster) error {
	j, err := clusterAPIView(c.Request().Context(), h.Store, cl, true)
	if err != nil {
		return err
	}
	return c.JSON(status, j)
}

// clusterAPIView is the cluster as GET /v1/gpu/clusters/{id} shows it (with
// its events when withEvents), read through st: the API's answers and the
// data of webhook events (X8), which st renders inside the change's
// transaction.
func clusterAPIView(ctx context.Context, st *models.Store, cl models.Cluster, withEvents bool) (api.Cluster, error) {
	var j api.Cluster
	nodes, err := st.NodesFor(ctx, cl.ID)
	if err != nil {
		return j, err
	}
	var events []models.ClusterEvent
	if withEvents {
		if events, err = st.EventsFor(ctx, cl.ID); err != nil {
			return j, err
		}
	}
	nccl, err := st.NCCLCheckFor(ctx, cl.OrgID, cl.ID)
	if err != nil {
		return j, err
	}
	gpus, err := st.GPUChecks(ctx, cl.OrgID, cl.ID)
	if err != nil {
		return j, err
	}
	starts, err := st.NodeStarts(ctx, cl.OrgID, cl.ID)
	if err != nil {
		return j, err
	}
	mounts, err := st.NodeMounts(ctx, cl.OrgID, cl.ID)
	if err != nil {
		return j, err
	}
	j = toClusterJSON(cl, nodes, events, startsByRank(starts))
	for i := range j.Nodes {
		for _, g := range gpus {
			if j.Nodes[i].Rank == g.Rank {
				j.Nodes[i].GPUs = g.Summary
			}
		}
		for _, m := range mounts {
			if j.Nodes[i].Rank == m.Rank {
				j.Nodes[i].Mounts = &api.NodeMounts{State: m.State, StartedAt: m.StartedAt, EndedAt: m.EndedAt, Error: m.Error}
			}
		}
	}
	j.NCCL = toNCCLJSON(nccl)
	if j.Verification, err = verificationJSON(ctx, st, cl); err != nil {
		return j, err
	}
	vol, err := st.VolumeOfCluster(ctx, cl)
	if err != nil {
		return j, err
	}
	j.Volume = toClusterVolumeJSON(cl, vol)
	return j, nil
}

// apiListClusters is GET /v1/gpu/clusters.
func (h *handler) apiListClusters(c echo.Context) error {
	p := principal(c)
	ctx := c.Request().Context()
	clusters, err := h.Store.ClustersForOrg(ctx, p.Org.ID)
	if err != nil {
		return err
	}
	clusters = inKeyEnv(p, clusters, func(cl models.Cluster) string { return cl.EnvID })
	ids := make([]string, len(clusters))
	for i, cl := range clusters {
		ids[i] = cl.ID
	}
	nodes, err := h.Store.NodesForClusters(ctx, ids)
	if err != nil {
		return err
	}
	starts, err := h.Store.NodeStartsForClusters(ctx, p.Org.ID, ids)
	if err != nil {
		return err
	}
	out := make([]api.Cluster, 0, len(clusters))
	for _, cl := range clusters {
		out = append(out, toClusterJSON(cl, nodes[cl.ID], nil, startsByRank(starts[cl.ID])))
	}
	return c.JSON(http.StatusOK, api.ClusterList{Clusters: out})
}

// apiGetCluster is GET /v1/gpu/clusters/{id}.
func (h *handler) apiGetCluster(c echo.Context) error {
	cl, err := h.Store.ClusterForOrg(c.Request().Context(), principal(c).Org.ID, c.Param("id"))
	if err != nil {
		return err
	}
	return h.clusterJSONResponse(c, http.StatusOK, cl)
}

// apiTerminate is POST /v1/gpu/clusters/{id}/terminate (L7): accepted in every state.
func (h *handler) apiTerminate(c echo.Context) error {
	cl, err := h.requestTerminate(c)
	if err != nil {
		return err
	}
	return h.clusterJSONResponse(c, http.StatusAccepted, cl)
}

// toClusterVolumeJSON is the cluster's volume and its mounts (V4), or nil.
func toClusterVolumeJSON(cl models.Cluster, v *models.Volume) *api.ClusterVolume {
	if v == nil {
		return nil
	}
	out := &api.ClusterVolume{ID: v.ID, Name: v.Name, SizeGB: v.SizeGB, Mounts: []api.Mount{}}
	for _, m := range models.Mounts(cl, v) {
		out.Mounts = append(out.Mounts, api.Mount{Path: m.Path, Nodes: m.Nodes, What: m.What})
	}
	return out
}
