package web

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// The /admin area is for the site's operators (`clusterdeck admin grant
// EMAIL`): organisations and quotas here, quote requests in
// quoterequests.go; more operator pages join it later (providers, markup,
// jobs).

func (h *handler) adminOrgRow(o models.OrgSummary) views.AdminOrgRow {
	vols, gb := h.Store.VolumeQuota(o.Org)
	return views.AdminOrgRow{ID: o.ID, Name: o.Name, Created: views.FormatTime(o.CreatedAt), Members: o.Members,
		MaxMachines: strconv.Itoa(o.MaxMachines), MaxGPUs: strconv.Itoa(o.MaxGPUs),
		MaxVolumes: strconv.Itoa(vols), MaxVolumeGB: strconv.Itoa(gb)}
}

// showAdmin is GET /admin: every organisation and its quotas.
func (h *handler) showAdmin(c echo.Context) error {
	orgs, err := h.Store.Orgs(c.Request().Context())
	if err != nil {
		return err
	}
	counts, err := h.Store.QuoteRequestCounts(c.Request().Context())
	if err != nil {
		return err
	}
	p := views.AdminPage{Meta: h.meta(c, "Admin"), NewQuoteRequests: counts[models.CapacityNew]}
	for _, o := range orgs {
		p.Orgs = append(p.Orgs, h.adminOrgRow(o))
	}
	if err := h.adminHealth(c, &p); err != nil {
		return err
	}
	usage, err := h.Store.GPUUsageByCluster(c.Request().Context())
	if err != nil {
		return err
	}
	var util float64
	p.FleetGPUs, p.FleetGPUClusters, util = models.FleetGPUUsage(usage)
	p.FleetGPUUtilPct = int(math.Round(util))
	return page(c, http.StatusOK, views.AdminPageView(p), views.AdminPageView(p))
}

// setOrgQuota is POST /admin/orgs/{id}/quota: machines and GPUs in use at
// once, live volumes and their GB together; launches, and volumes created
// or grown, are refused over it (403 quota_exceeded).
func (h *handler) setOrgQuota(c echo.Context) error {
	ctx := c.Request().Context()
	before, err := h.Store.OrgByID(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	row := views.AdminOrgRow{ID: before.ID, Name: before.Name, Created: views.FormatTime(before.CreatedAt),
		MaxMachines: trimForm(c, "max_machines"), MaxGPUs: trimForm(c, "max_gpus"),
		MaxVolumes: trimForm(c, "max_volumes"), MaxVolumeGB: trimForm(c, "max_volume_gb"), Problems: map[string]string{}}
	var q models.OrgQuota
	for _, f := range []struct {
		name, typed string
		dst         *int
	}{{"max_machines", row.MaxMachines, &q.MaxMachines}, {"max_gpus", row.MaxGPUs, &q.MaxGPUs},
		{"max_volumes", row.MaxVolumes, &q.MaxVolumes}, {"max_volume_gb", row.MaxVolumeGB, &q.MaxVolumeGB}} {
		if f.typed == "" && (f.name == "max_volumes" || f.name == "max_volume_gb") {
			continue // empty: the default (0)
		}
		n, err := strconv.Atoi(f.typed)
		if err != nil {
			row.Problems[f.name] = "Enter a whole number."
		}
		*f.dst = n
	}
	if len(row.Problems) == 0 {
		_, err = h.act(c).SetOrgQuota(ctx, before.ID, q)
		var fe models.FieldErrors
		if errors.As(err, &fe) {
			row.Problems = fe
		} else if err != nil {
			return err
		}
	}
	if len(row.Problems) > 0 {
		p := views.AdminPage{Meta: h.meta(c, "Admin"), Orgs: []views.AdminOrgRow{row}}
		return page(c, http.StatusUnprocessableEntity, views.AdminPageView(p), views.AdminOrgRowView(p.Meta.CSRF, row))
	}
	_ = h.flash(c, views.FlashSuccess, "Quota of "+before.Name+" saved.")
	return redirect(c, "/admin")
}

// adminHealth adds each provider's catalog health and each job's last run (OP2).
func (h *handler) adminHealth(c echo.Context, p *views.AdminPage) error {
	ctx := c.Request().Context()
	catalogs, err := h.Store.CatalogHealthByProvider(ctx)
	if err != nil {
		return err
	}
	now := h.Store.Now()
	for _, ch := range catalogs {
		p.Providers = append(p.Providers, views.AdminProviderRow{Name: ch.Provider, Offers: ch.Offers,
			Refreshed: views.FormatTime(ch.RefreshedAt), Stale: now.Sub(ch.RefreshedAt) > models.OfferFreshness})
	}
	runs, err := h.Store.JobRuns(ctx)
	if err != nil {
		return err
	}
	for _, r := range runs {
		p.Jobs = append(p.Jobs, views.AdminJobRow{Name: r.Name, LastRun: views.FormatTime(r.StartedAt),
			Duration: r.FinishedAt.Sub(r.StartedAt).Round(time.Millisecond).String(), Runs: r.Runs, Failures: r.Failures, LastError: r.Error})
	}
	return nil
}
