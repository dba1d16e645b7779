package web

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

// sizeChips are the node sizes each offer row shows as sellable or not (O4).
var sizeChips = []int{2, 4, 8, 16, 32, 64}

// offerQuery reads the picker's filters from the URL (the page and the API
// share it). first returns the first non-empty of several accepted names.
func offerQuery(q url.Values, defaults bool) (views.OfferForm, models.OfferFilter, models.FieldErrors) {
	first := func(names ...string) string {
		for _, n := range names {
			if v := strings.TrimSpace(q.Get(n)); v != "" {
				return v
			}
		}
		return ""
	}
	form := views.OfferForm{
		Accelerator:  first("accelerator"),
		Nodes:        first("nodes"),
		Interconnect: first("interconnect"),
		Kind:         first("machine_kind", "machineKind"),
		GPUs:         first("gpus_per_node", "gpusPerNode"),
		MaxPrice:     first("max_price", "maxHourlyPrice"),
		Community:    parseBool(first("include_community", "includeCommunity")),
	}
	if defaults && form.Accelerator == "" {
		form.Accelerator = "H100_80GB"
	}
	if form.Nodes == "" {
		form.Nodes = "2"
	}
	f := models.OfferFilter{Accelerator: form.Accelerator, Interconnect: form.Interconnect,
		MachineKind: form.Kind, IncludeCommunity: form.Community}
	fe := models.FieldErrors{}
	n, err := strconv.Atoi(form.Nodes)
	if err != nil {
		fe["nodes"] = fmt.Sprintf("a whole number of machines, %d to %d", models.MinNodes, models.MaxNodes)
	}
	f.Nodes = n
	if form.GPUs != "" {
		if f.GPUsPerNode, err = strconv.Atoi(form.GPUs); err != nil {
			fe["gpus_per_node"] = "machines come with 1, 2, 4 or 8 GPUs"
		}
	}
	if form.MaxPrice != "" {
		if f.MaxClusterHour, err = models.ParseUSD(form.MaxPrice); err != nil {
			fe["max_price"] = "a dollar amount per hour, like 80 or 79.50"
		}
	}
	for k, v := range f.Validate() {
		if _, ok := fe[k]; !ok {
			fe[k] = v
		}
	}
	return form, f, fe
}

func parseBool(s string) bool {
	b, _ := strconv.ParseBool(s)
	return b || s == "on"
}

// listOffers is GET /offers (also the landing page): the picker, or for htmx
// only its results (O3).
func (h *handler) listOffers(c echo.Context) error {
	form, f, problems := offerQuery(c.QueryParams(), true)
	p := views.OffersPage{
		Meta: h.meta(c, "Offers"), Form: form, Problems: problems,
		Accelerators: models.Accelerators, Interconnects: models.Interconnects,
		Kinds: models.MachineKinds, GPUCounts: models.GPUCounts,
	}
	status := 200
	if len(problems) > 0 {
		status = 422
	} else {
		groups, err := h.Store.PickOffers(c.Request().Context(), f)
		if err != nil {
			return err
		}
		p.Groups, p.Shown = offerGroupViews(groups, f)
		if p.Private, err = h.privateRows(c, f); err != nil {
			return err
		}
	}
	return page(c, status, views.OffersPageView(p), views.OfferResults(p))
}

// privateRows are the signed-in organisation's private offers for the
// picker (X9): the one place they are merged into it (the API's in
// apiListOffers reads the same PrivatePicks).
func (h *handler) privateRows(c echo.Context, f models.OfferFilter) ([]views.PrivateOfferRow, error) {
	p := principal(c)
	if p == nil {
		return nil, nil
	}
	picks, err := h.Store.PrivatePicks(c.Request().Context(), p.Org.ID, f)
	if err != nil {
		return nil, err
	}
	out := make([]views.PrivateOfferRow, 0, len(picks))
	for _, pk := range picks {
		out = append(out, privateOfferRow(pk.PrivateOffer, pk.Offer.MachineHour()))
	}
	return out, nil
}

func offerGroupViews(groups []models.OfferGroup, f models.OfferFilter) ([]views.OfferGroupView, int) {
	out := make([]views.OfferGroupView, 0, len(groups))
	shown := 0
	for _, g := range groups {
		gv := views.OfferGroupView{Location: g.Location, LocationName: g.LocationName, Nodes: g.Nodes}
		for _, o := range g.Offers {
			gv.Offers = append(gv.Offers, offerRow(o, f.Nodes))
		}
		shown += len(gv.Offers)
		out = append(out, gv)
	}
	return out, shown
}

func offerRow(o models.Offer, n int) views.OfferRow {
	row := views.OfferRow{
		ID: o.ID, Interconnect: o.Interconnect, Kind: o.MachineKind, GPUs: o.GPUsPerNode,
		Shape:        views.Shape(n, o.GPUsPerNode, o.Accelerator),
		ClusterPrice: models.USD(o.ClusterHour(n)) + "/h",
		MachinePrice: models.USD(o.MachineHour()) + "/h",
		Availability: availabilityText(o),
		MaxNodes:     o.MaxNodes(),
		Sell:         string(o.SellFor(n)),
		Community:    o.Community,
		LaunchURL:    "/clusters/new?" + url.Values{"offer": {o.ID}, "nodes": {strconv.Itoa(n)}}.Encode(),
		QuoteURL: "/quote-requests/new?" + url.Values{
			"accelerator": {o.Accelerator}, "nodes": {strconv.Itoa(n)}, "gpus_per_node": {strconv.Itoa(o.GPUsPerNode)},
			"interconnect": {o.Interconnect}, "location": {o.Location},
		}.Encode(),
	}
	for _, size := range sizeChips {
		row.Sizes = append(row.Sizes, views.SizeChip{Nodes: size, Sell: string(o.SellFor(size))})
	}
	return row
}

func availabilityText(o models.Offer) string {
	switch {
	case o.NodesAvailable != nil:
		return strconv.Itoa(*o.NodesAvailable) + " free"
	case o.Available:
		return "in stock"
	}
	return "none"
}
