package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// Volumes (V1–V5, X11): the page of the current environment's volumes and
// /v1/volumes for the API key's. Both call the same use cases
// (models.Actions.CreateVolume, GrowVolume, DeleteVolume).

// volumeAttached is V3's 409: grow or delete while a cluster is attached, or
// a second cluster mounting it.
func volumeAttached(e *models.VolumeAttachedError) *APIError {
	return &APIError{Status: http.StatusConflict, Code: "volume_attached", Message: e.Error(),
		Extra: map[string]any{"volumeId": e.Volume.ID, "clusterId": e.ClusterID}}
}

// volumeAdmission maps a volume's admission refusals (B9:
// creating or growing one passes a launch's admission) onto the launch's
// answers: 402 insufficient_balance, 403 quota_exceeded, 409
// budget_reached. Anything else is returned as it is.
func volumeAdmission(err error) (*APIError, bool) {
	var ib *models.InsufficientBalanceError
	var qe *models.QuotaError
	var br *models.BudgetReachedError
	switch {
	case errors.As(err, &ib):
		return insufficientBalance(ib), true
	case errors.As(err, &qe):
		return &APIError{Status: http.StatusForbidden, Code: "quota_exceeded",
			Message: fmt.Sprintf("This needs %d more %s; %d are in use and your organisation's limit is %d. Delete volumes you no longer need, or ask the operator to raise the limit.",
				qe.Requested, qe.Resource, qe.InUse, qe.Limit),
			Extra: map[string]any{"resource": qe.Resource, "limit": qe.Limit, "inUse": qe.InUse, "requested": qe.Requested}}, true
	case errors.As(err, &br):
		return classify(br), true
	}
	return nil, false
}

// wayOf is ae's way forward for a page, or nil when it has none.
func wayOf(ae *APIError) *views.Flash {
	if ae.Href == "" {
		return nil
	}
	f := refusalFlash(ae)
	return &f
}

// apiVolumeError is err as the API answers it.
func apiVolumeError(err error) error {
	if ae, ok := volumeAdmission(err); ok {
		return ae
	}
	return err
}

// volumesPage builds /volumes for the current environment, with each
// volume's accrued cost (X11).
func (h *handler) volumesPage(c echo.Context) (views.VolumesPage, error) {
	p := principal(c)
	ctx := c.Request().Context()
	vs, err := h.Store.VolumesForOrg(ctx, p.Org.ID, p.Env.ID)
	if err != nil {
		return views.VolumesPage{}, err
	}
	att, err := h.Store.Attachments(ctx, vs)
	if err != nil {
		return views.VolumesPage{}, err
	}
	usage, err := h.Store.VolumeUsageForMonth(ctx, p.Org.ID, models.UsageWindow{})
	if err != nil {
		return views.VolumesPage{}, err
	}
	accrued := map[string]models.Money{}
	for _, u := range usage {
		accrued[u.Volume.ID] = u.Total()
	}
	locs, err := h.Store.VolumeLocations(ctx)
	if err != nil {
		return views.VolumesPage{}, err
	}
	pg := views.VolumesPage{Meta: h.meta(c, "Volumes"), Env: p.Env.Name,
		Rate: "$" + models.DecimalUSD(models.VolumeGBHour) + " per GB-hour"}
	for _, l := range locs {
		pg.Locations = append(pg.Locations, views.VolumeLocationOption{ID: l.Location, Label: l.Label()})
	}
	for _, v := range vs {
		r := views.VolumeRow{ID: v.ID, Name: v.Name, Location: v.Location, SizeGB: v.SizeGB,
			PerHour: models.PriceUSD(v.HourRate()) + "/h", Accrued: models.USD(accrued[v.ID]),
			Created: views.FormatTime(v.CreatedAt)}
		if cl, ok := att[v.ID]; ok {
			r.ClusterID, r.ClusterName = cl.ID, cl.Name
		}
		pg.Rows = append(pg.Rows, r)
	}
	return pg, nil
}

// listVolumes is GET /volumes.
func (h *handler) listVolumes(c echo.Context) error {
	pg, err := h.volumesPage(c)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.VolumesView(pg))
}

// volumeFormNames maps the models' problems onto the form's field names.
var volumeFormNames = map[string]string{"sizeGb": "size_gb"}

func formProblems(fe models.FieldErrors, names map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range fe {
		if n, ok := names[k]; ok {
			k = n
		}
		out[k] = v
	}
	return out
}

// formSize reads a typed size: anything but a whole number is -1, which
// validation refuses with the range.
func formSize(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return -1
	}
	return n
}

// createVolume is POST /volumes: 422 with field problems and the input
// kept, or the volume and a 303 back to the list.
func (h *handler) createVolume(c echo.Context) error {
	form := views.VolumeForm{Name: trimForm(c, "name"), Location: trimForm(c, "location"), SizeGB: trimForm(c, "size_gb")}
	v, err := h.act(c).CreateVolume(c.Request().Context(), models.VolumeInput{Name: form.Name, Location: form.Location, SizeGB: formSize(form.SizeGB)})
	var fe models.FieldErrors
	var way *views.Flash
	status := http.StatusUnprocessableEntity
	if ae, ok := volumeAdmission(err); ok { // shown under the size, which is what costs
		fe, status, way = models.FieldErrors{"sizeGb": refusalFlash(ae).Message}, ae.Status, wayOf(ae)
	}
	if fe != nil || errors.As(err, &fe) {
		pg, perr := h.volumesPage(c)
		if perr != nil {
			return perr
		}
		pg.Form, pg.Problems, pg.Way = form, formProblems(fe, volumeFormNames), way
		return page(c, status, views.VolumesView(pg), views.VolumeFormView(pg))
	}
	if err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Volume "+v.Name+" created: "+strconv.Itoa(v.SizeGB)+" GB in "+v.Location+
		", billing $"+models.DecimalUSD(v.HourRate())+"/h until you delete it.")
	return redirect(c, "/volumes")
}

// volumeInEnv loads a volume of the current environment (another one's, or
// another organisation's, is not found).
func (h *handler) volumeInEnv(c echo.Context) (models.Volume, error) {
	return h.volumeOfEnv(c, c.Param("id"))
}

// volumeOfEnv loads volume id of the current environment.
func (h *handler) volumeOfEnv(c echo.Context, id string) (models.Volume, error) {
	p := principal(c)
	v, err := h.Store.VolumeForOrg(c.Request().Context(), p.Org.ID, id)
	if err != nil {
		return v, err
	}
	if v.EnvID != p.Env.ID {
		return v, models.ErrNotFound
	}
	return v, nil
}

// growVolume is POST /volumes/{id}/grow: 422 beside the row, 409 while
// attached (V3), or the new size.
func (h *handler) growVolume(c echo.Context) error {
	v, err := h.volumeInEnv(c)
	if err != nil {
		return err
	}
	typed := trimForm(c, "size_gb")
	g, err := h.act(c).GrowVolume(c.Request().Context(), v.ID, formSize(typed))
	var fe models.FieldErrors
	var way *views.Flash
	status := http.StatusUnprocessableEntity
	if ae, ok := volumeAdmission(err); ok {
		fe, status, way = models.FieldErrors{"sizeGb": refusalFlash(ae).Message}, ae.Status, wayOf(ae)
	} else if fe == nil && !errors.As(err, &fe) && err != nil {
		// A4: any other refusal (V3: a cluster mounted it
		// meanwhile) is said beside the size as typed, not on an error page.
		if ae := classify(err); ae.Status >= 400 && ae.Status < 500 && ae.Status != http.StatusNotFound {
			fe, status, way = models.FieldErrors{"sizeGb": refusalFlash(ae).Message}, ae.Status, wayOf(ae)
		}
	}
	if fe != nil || errors.As(err, &fe) {
		pg, perr := h.volumesPage(c)
		if perr != nil {
			return perr
		}
		pg.GrowID, pg.GrowProblems, pg.Way = v.ID, formProblems(fe, volumeFormNames), way
		for i := range pg.Rows {
			if pg.Rows[i].ID == v.ID {
				pg.Rows[i].GrowTo = typed
			}
		}
		return render(c, status, views.VolumesView(pg))
	}
	if err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Volume "+g.Name+" is now "+strconv.Itoa(g.SizeGB)+" GB, at $"+models.DecimalUSD(g.HourRate())+"/h from now.")
	return redirect(c, "/volumes")
}

// deleteVolume is POST /volumes/{id}/delete: 409 while attached (V3).
func (h *handler) deleteVolume(c echo.Context) error {
	v, err := h.volumeInEnv(c)
	if err != nil {
		return err
	}
	if _, err := h.act(c).DeleteVolume(c.Request().Context(), v.ID); err != nil {
		return err
	}
	_ = h.flash(c, views.FlashSuccess, "Volume "+v.Name+" deleted; its billing stopped.")
	return redirect(c, "/volumes")
}

func toVolumeJSON(v models.Volume, att *models.Cluster) api.Volume {
	j := api.Volume{ID: v.ID, Name: v.Name, Location: v.Location, LocationName: v.LocationName, Provider: v.Provider,
		SizeGB: v.SizeGB, GBHourRate: models.DecimalUSD(v.GBHour), USDPerHour: models.DecimalUSD(v.HourRate()),
		CreatedAt: v.CreatedAt.UTC()}
	if att != nil {
		j.ClusterID = &att.ID
	}
	return j
}

// apiListVolumes is GET /v1/volumes: the key's environment's volumes.
func (h *handler) apiListVolumes(c echo.Context) error {
	p := principal(c)
	ctx := c.Request().Context()
	vs, err := h.Store.VolumesForOrg(ctx, p.Org.ID, p.Env.ID)
	if err != nil {
		return err
	}
	att, err := h.Store.Attachments(ctx, vs)
	if err != nil {
		return err
	}
	out := api.VolumeList{Volumes: []api.Volume{}}
	for _, v := range vs {
		var a *models.Cluster
		if cl, ok := att[v.ID]; ok {
			a = &cl
		}
		out.Volumes = append(out.Volumes, toVolumeJSON(v, a))
	}
	return c.JSON(http.StatusOK, out)
}

// apiCreateVolume is POST /v1/volumes: 201 with the volume, or 422.
func (h *handler) apiCreateVolume(c echo.Context) error {
	var b api.VolumeBody
	if _, err := decodeJSON(c, &b); err != nil {
		return err
	}
	v, err := h.act(c).CreateVolume(c.Request().Context(), models.VolumeInput{Name: b.Name, Location: b.Location, SizeGB: b.SizeGB})
	if err != nil {
		return apiVolumeError(err)
	}
	return c.JSON(http.StatusCreated, toVolumeJSON(v, nil))
}

// apiGetVolume is GET /v1/volumes/{id}.
func (h *handler) apiGetVolume(c echo.Context) error {
	v, err := h.volumeInEnv(c)
	if err != nil {
		return err
	}
	att, err := h.Store.Attachment(c.Request().Context(), v)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toVolumeJSON(v, att))
}

// apiGrowVolume is POST /v1/volumes/{id}/grow: 200 with the volume, 422,
// or 409 volume_attached (V3).
func (h *handler) apiGrowVolume(c echo.Context) error {
	v, err := h.volumeInEnv(c)
	if err != nil {
		return err
	}
	var b api.VolumeGrowBody
	if _, err := decodeJSON(c, &b); err != nil {
		return err
	}
	g, err := h.act(c).GrowVolume(c.Request().Context(), v.ID, b.SizeGB)
	if err != nil {
		return apiVolumeError(err)
	}
	return c.JSON(http.StatusOK, toVolumeJSON(g, nil))
}

// apiDeleteVolume is DELETE /v1/volumes/{id}: 204, or 409 volume_attached (V3).
func (h *handler) apiDeleteVolume(c echo.Context) error {
	v, err := h.volumeInEnv(c)
	if err != nil {
		return err
	}
	if _, err := h.act(c).DeleteVolume(c.Request().Context(), v.ID); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// launchStorage is the launch page's storage panel (V1, V2, V5): the
// quote's volume, and the choices that re-price the offer with another
// (the environment's detached volumes in the offer's location, or a new
// one); on a community host only why there is none.
func (h *handler) launchStorage(c echo.Context, q models.Quote) (views.LaunchStorage, error) {
	st := views.LaunchStorage{Community: q.Community, Location: q.Location, OfferID: q.OfferID, Nodes: q.Nodes,
		Reason: models.CommunityVolumeReason, Rate: "$" + models.DecimalUSD(q.VolumeGBHour) + "/GB-h"}
	if q.PrivateOfferID != "" {
		st.Private = true
	}
	switch {
	case q.VolumeID != "":
		st.Current = "mounts volume " + q.VolumeID + " (" + strconv.Itoa(q.VolumeGB) + " GB) on every node"
		if v, err := h.Store.VolumeForOrg(c.Request().Context(), q.OrgID, q.VolumeID); err == nil {
			st.Current = "mounts volume " + v.Name + " (" + strconv.Itoa(v.SizeGB) + " GB) on every node; it stays after terminate"
		}
		st.VolumeID = q.VolumeID
	case q.VolumeGB > 0:
		st.Current = "creates a " + strconv.Itoa(q.VolumeGB) + " GB volume with the cluster; it stays after terminate and bills until you delete it"
		st.NewGB = strconv.Itoa(q.VolumeGB)
	default:
		st.Current = "takes no persistent volume: everything on the machines is deleted on terminate"
	}
	if q.Community || st.Private {
		return st, nil
	}
	p := principal(c)
	vs, err := h.Store.VolumesForOrg(c.Request().Context(), p.Org.ID, q.EnvID)
	if err != nil {
		return st, err
	}
	att, err := h.Store.Attachments(c.Request().Context(), vs)
	if err != nil {
		return st, err
	}
	for _, v := range vs {
		if _, busy := att[v.ID]; busy || v.Location != q.Location {
			continue
		}
		st.Volumes = append(st.Volumes, views.VolumeOption{ID: v.ID, Label: v.Name + " (" + strconv.Itoa(v.SizeGB) + " GB)"})
	}
	return st, nil
}

// storageView is the cluster page's storage panel (V1, V4): the folders
// the machine kind gets and the cluster's volume.
func (h *handler) storageView(c echo.Context, cl models.Cluster) (*views.StorageView, error) {
	vol, err := h.Store.VolumeOfCluster(c.Request().Context(), cl)
	if err != nil {
		return nil, err
	}
	mounts := models.Mounts(cl, vol)
	if len(mounts) == 0 {
		return nil, nil
	}
	st := &views.StorageView{}
	if vol != nil {
		st.VolumeID, st.VolumeName = vol.ID, vol.Name
		switch {
		case vol.DeletedAt != nil:
			st.VolumeNote = "deleted since"
		case cl.Status.Terminal():
			st.VolumeNote = "kept after terminate: it bills until you delete it"
		case cl.Lifecycle().Stopped(): // B6: still attached, still billing
			st.VolumeNote = strconv.Itoa(vol.SizeGB) + " GB, kept while this cluster is stopped and after terminate; it bills meanwhile and cannot be grown or deleted until the cluster ends"
		default:
			st.VolumeNote = strconv.Itoa(vol.SizeGB) + " GB, kept after terminate; it cannot be grown or deleted while this cluster runs"
		}
	}
	for _, m := range mounts {
		nodes := strings.Join(m.Nodes, ", ")
		if len(m.Nodes) == cl.Nodes && cl.Nodes > 1 {
			nodes = "every node"
		}
		st.Mounts = append(st.Mounts, views.MountView{Path: m.Path, Nodes: nodes, What: m.What})
	}
	if cl.Status.Terminal() {
		return st, nil
	}
	if st.Nodes, err = h.mountStates(c, cl); err != nil {
		return nil, err
	}
	return st, nil
}

// mountStates is each node's mounts step as its agent last reported it
// (V4): waiting until the cluster is ready and the agent began it, then
// mounting, mounted, or failed with the reason. Nodes that mount nothing
// (a container's workers) are left out.
func (h *handler) mountStates(c echo.Context, cl models.Cluster) ([]views.MountStateView, error) {
	ctx := c.Request().Context()
	nodes, err := h.Store.NodesFor(ctx, cl.ID)
	if err != nil {
		return nil, err
	}
	rows, err := h.Store.NodeMounts(ctx, cl.OrgID, cl.ID)
	if err != nil {
		return nil, err
	}
	byRank := make(map[int]models.NodeMount, len(rows))
	for _, r := range rows {
		byRank[r.Rank] = r
	}
	var out []views.MountStateView
	for _, n := range nodes {
		if n.Rank != 0 && !models.HasSharedFolder(cl.MachineKind) {
			continue
		}
		r, ok := byRank[n.Rank]
		switch {
		case !ok:
			out = append(out, views.MountStateView{Node: n.Name, State: "waiting", Label: "waiting for the cluster to be ready"})
		case r.State == models.MountsMounting:
			out = append(out, views.MountStateView{Node: n.Name, State: r.State, Label: "mounting since " + clock(&r.StartedAt)})
		case r.State == models.MountsMounted:
			out = append(out, views.MountStateView{Node: n.Name, State: r.State, Label: "mounted at " + clock(r.EndedAt)})
		default:
			out = append(out, views.MountStateView{Node: n.Name, State: r.State, Label: "failed at " + clock(r.EndedAt) + ": " + r.Error})
		}
	}
	return out, nil
}
