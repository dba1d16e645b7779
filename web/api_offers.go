package web

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

func toOfferJSON(o models.Offer, n int) api.Offer {
	return api.Offer{
		ID: o.ID, Provider: o.Provider, Upstream: o.Upstream, Location: o.Location, LocationName: o.LocationName,
		Interconnect: o.Interconnect, MachineKind: o.MachineKind, Accelerator: o.Accelerator,
		GPUsPerNode: o.GPUsPerNode, VCPUs: o.VCPUs, MemoryGB: o.MemoryGB, Community: o.Community,
		NodesAvailable: o.NodesAvailable, MaxNodes: o.MaxNodes(), Nodes: n,
		Availability:      string(o.SellFor(n)),
		USDPerMachineHour: decimalUSD(o.MachineHour()),
		USDPerHour:        decimalUSD(o.ClusterHour(n)),
		PerGPUUSDPerHour:  decimalUSD(o.PerGPUHour),
		DiskGBPerNode:     o.RootDiskGB,
		RootDiskRate:      decimalUSD(o.DiskGBHour),
		RefreshedAt:       o.RefreshedAt,
		TrackRecord:       toTrackJSON(o.Track),
	}
}

// toTrackJSON is an offer's track record at the asked size (X2, X13).
func toTrackJSON(r *models.TrackRecord) api.TrackRecord {
	j := api.TrackRecord{Summary: r.Summary(), RingSummary: r.RingSummary()}
	if r == nil {
		return j
	}
	j.Launches, j.LaunchesTried, j.LaunchesStarted, j.LaunchesReady, j.ReadySamples = r.Launches, r.Tried, r.Started, r.Ready, r.ReadySamples
	o := r.Outcomes
	j.Outcomes = api.TrackOutcomes{Ready: o.Ready, ReadyAfterSwap: o.ReadyAfterSwap, FailedPlacing: o.FailedPlacing,
		FailedInstalling: o.FailedInstalling, FailedVerifying: o.FailedVerifying, Cancelled: o.Cancelled, UnderWay: o.UnderWay}
	j.VerificationFailures, j.MachineFailures = r.VerifyFailures, r.MachineFailures
	j.MachineHours = math.Round(r.MachineHours*10) / 10
	if rate, ok := r.SuccessRate(); ok {
		rate = math.Round(rate*1000) / 1000
		j.SuccessRate = &rate
	}
	if r.ReadySamples > 0 {
		p50, p90 := r.ReadyP50, r.ReadyP90
		j.ReadyMinutesMedian, j.ReadyMinutesP90 = &p50, &p90
	}
	if per, ok := r.FailuresPer1000h(); ok {
		per = math.Round(per*10) / 10
		j.FailuresPer1000Hours = &per
	}
	if g := r.Ring; g.Samples > 0 {
		j.Ring = &api.TrackRing{Samples: g.Samples, BusBwGBpsMedian: math.Round(g.Median.GBps*10) / 10,
			BusBwGBpsWorst: math.Round(g.Worst.GBps*10) / 10, LineRateGBps: g.Median.LineRateGBps}
		if p, ok := g.Median.Percent(); ok {
			j.Ring.PercentOfLineRateMedian = &p
		}
		if p, ok := g.Worst.Percent(); ok {
			j.Ring.PercentOfLineRateWorst = &p
		}
	}
	return j
}

// decimalUSD is models.DecimalUSD in one allocation (a list prints
// thousands of prices).
func decimalUSD(m models.Money) string {
	var b [32]byte
	return string(models.AppendDecimalUSD(b[:0], m))
}

// apiListOffers is GET /v1/gpu/offers: the picker as JSON (API1).
func (h *handler) apiListOffers(c echo.Context) error {
	_, f, problems := offerQuery(c.QueryParams(), false)
	if len(problems) > 0 {
		return invalid(problems)
	}
	pick, err := h.Store.PreparePick(c.Request().Context(), f)
	if err != nil {
		return err
	}
	book, err := h.Store.OfferTrack(c.Request().Context())
	if err != nil {
		return err
	}
	pick = pick.WithTrack(book) // X2: one statement, whatever the catalog's size
	// The public answer is the same bytes for the same stamp (O3):
	// encode it once. An API key's organisation may have answers of its own
	// (private offers), which no stamp covers: encoded each time.
	if _, pretty := c.QueryParams()["pretty"]; pretty || principal(c) != nil {
		resp := offersResponse(pick, f)
		if p := principal(c); p != nil {
			picks, err := h.Store.PrivatePicks(c.Request().Context(), p.Org.ID, f)
			if err != nil {
				return err
			}
			for _, pk := range picks {
				resp.PrivateOffers = append(resp.PrivateOffers, toPrivateOfferJSON(pk))
			}
		}
		return c.JSON(http.StatusOK, resp)
	}
	key := "json " + pick.Stamp
	body, ok := h.renders.get(key)
	if !ok {
		buf := pageBuffers.Get().(*bytes.Buffer)
		defer putPageBuffer(buf)
		if err := json.NewEncoder(buf).Encode(offersResponse(pick, f)); err != nil {
			return err
		}
		body = h.renders.put(key, buf.Bytes())
	}
	return h.writeSpliced(c, http.StatusOK, echo.MIMEApplicationJSON, nil, key, body, nil)
}

func offersResponse(pick *models.Pick, f models.OfferFilter) api.OffersResponse {
	groups := pick.Groups()
	resp := api.OffersResponse{Accelerator: f.Accelerator, Nodes: f.Nodes, IncludeCommunity: f.IncludeCommunity,
		Groups: make([]api.OfferGroup, 0, len(groups))}
	if at, stale := pick.Freshness(); !at.IsZero() {
		at = at.UTC()
		resp.RefreshedAt, resp.CatalogStale = &at, stale
	}
	for _, g := range groups {
		gj := api.OfferGroup{Location: g.Location, LocationName: g.LocationName, Nodes: g.Nodes,
			Offers: make([]api.Offer, 0, len(g.Offers))}
		for _, o := range g.Offers {
			gj.Offers = append(gj.Offers, toOfferJSON(o, f.Nodes))
		}
		resp.Count += len(gj.Offers)
		resp.Groups = append(resp.Groups, gj)
	}
	return resp
}

// toPrivateOfferJSON is one of the organisation's private offers (X9).
func toPrivateOfferJSON(pk models.PrivatePick) api.PrivateOffer {
	return api.PrivateOffer{ID: pk.ID, OfferID: pk.OfferID, Provider: pk.Provider, Location: pk.Location,
		LocationName: pk.LocationName, Accelerator: pk.Accelerator, Interconnect: pk.Interconnect, MachineKind: pk.MachineKind,
		GPUsPerNode: pk.GPUsPerNode, Nodes: pk.Nodes, USDPerMachineHour: models.DecimalUSD(pk.Offer.MachineHour()),
		USDPerHour: models.DecimalUSD(pk.Offer.ClusterHour(pk.Nodes)), ValidUntil: pk.ValidUntil}
}
