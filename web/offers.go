package web

import (
	"bytes"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/views"
	"github.com/labstack/echo/v4"
)

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
		Sort:         first("sort"),
	}
	if defaults && form.Accelerator == "" {
		form.Accelerator = "H100_80GB"
	}
	if form.Nodes == "" {
		form.Nodes = "2"
	}
	f := models.OfferFilter{Accelerator: form.Accelerator, Interconnect: form.Interconnect,
		MachineKind: form.Kind, IncludeCommunity: form.Community, Sort: models.OfferSort(form.Sort)}
	fe := models.FieldErrors{}
	n, err := strconv.Atoi(form.Nodes)
	if err != nil {
		fe["nodes"] = fmt.Sprintf("Enter a whole number of machines, %d to %d.", models.MinNodes, models.MaxNodes)
	}
	f.Nodes = n
	// "any" is the picker's explicit choice of every size; absent, the page
	// picks a default (listOffers) and the API shows every size.
	if form.GPUs != "" && form.GPUs != views.AnyGPUs {
		if f.GPUsPerNode, err = strconv.Atoi(form.GPUs); err != nil {
			fe["gpus_per_node"] = "Machines come with 1, 2, 4 or 8 GPUs."
		}
	}
	if form.MaxPrice != "" {
		if f.MaxClusterHour, err = models.ParseUSD(form.MaxPrice); err != nil {
			fe["max_price"] = "Enter a price ceiling in dollars per hour, like 80 or 79.50."
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
	if id := c.QueryParam("volume"); id != "" && principal(c) != nil && len(problems) == 0 {
		// V2: pinned to the volume's location, datacenter offers only.
		v, err := h.volumeOfEnv(c, id)
		if err != nil {
			return err
		}
		f.Location, f.IncludeCommunity, p.Form.Community = v.Location, false, false
		p.Volume = &views.PinnedVolume{ID: v.ID, Name: v.Name, Location: v.Location}
	}
	status, keptKey := 200, "" // keptKey: the results are kept under it (shared)
	if len(problems) > 0 {
		status = 422
	} else {
		pick, err := h.Store.PreparePick(c.Request().Context(), f)
		if err != nil {
			return err
		}
		book, err := h.Store.OfferTrack(c.Request().Context())
		if err != nil {
			return err
		}
		pick = pick.WithTrack(book) // each row's track record (X2), in one statement
		// Private rows are the organisation's own: shown whatever the
		// default machine size, and before offerResults, so signed-in
		// answers are never kept (offerResults).
		if p.Private, err = h.privateRows(c, f); err != nil {
			return err
		}
		if form.GPUs == "" {
			// The default GPUs per machine is the largest machine the other
			// filters leave: a cluster is usually built of full machines
			// (O3). "Any" stays one choice away, and in the URL.
			if g := pick.LargestMachine(); g > 0 {
				pick, f.GPUsPerNode = pick.WithGPUs(g), g
				p.Form.GPUs, p.GPUsDefaulted = strconv.Itoa(g), true
			}
		}
		results, key, err := h.offerResults(c, p, pick, f)
		if err != nil {
			return err
		}
		p.ResultsHTML, keptKey = results, key
	}
	if p.ResultsHTML != nil && isPartial(c) {
		c.Response().Header().Add("Vary", "HX-Request")
		if keptKey != "" {
			return h.writeSpliced(c, status, echo.MIMETextHTMLCharsetUTF8, nil, keptKey, p.ResultsHTML, nil)
		}
		return c.HTMLBlob(status, p.ResultsHTML)
	}
	if keptKey != "" {
		return h.writeOffersPage(c, status, p, keptKey)
	}
	return page(c, status, views.OffersPageView(p), views.OfferResults(p))
}

// resultsMark stands for the kept results while the page around them is
// rendered: a comment, which no escaped text can contain.
var resultsMark = []byte("<!--clusterdeck:offer-results-->")

// writeOffersPage renders the full page around kept results and sends the
// two apart, so the kept part's compression is reused (gzipsplice.go).
func (h *handler) writeOffersPage(c echo.Context, status int, p views.OffersPage, key string) error {
	c.Response().Header().Add("Vary", "HX-Request")
	kept := p.ResultsHTML
	p.ResultsHTML = resultsMark
	buf := pageBuffers.Get().(*bytes.Buffer)
	defer putPageBuffer(buf)
	if err := views.OffersPageView(p).Render(c.Request().Context(), buf); err != nil {
		return err
	}
	before, after, ok := bytes.Cut(buf.Bytes(), resultsMark)
	if !ok {
		return fmt.Errorf("offers page: the results were not placed")
	}
	return h.writeSpliced(c, status, echo.MIMETextHTMLCharsetUTF8, before, key, kept, after)
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

// offerResults renders the results fragment, or finds it already rendered
// for the same answer (models.Pick's stamp) and the same typed form: at
// catalog scale it is most of the page, and the catalog changes once a
// minute (O3). OfferResults must show only the answer and the form:
// whatever else it comes to show (per user, per organisation) joins the key.
// key is where they are kept, "" when they are not (signed in).
func (h *handler) offerResults(c echo.Context, p views.OffersPage, pick *models.Pick, f models.OfferFilter) (_ []byte, key string, _ error) {
	// Only the public answer is kept: a signed-in organisation's results
	// may show what is its own (private offers), which no stamp covers.
	shared := principal(c) == nil
	fm := p.Form
	key = fmt.Sprintf("html %s|%q %q %q %q %q %q %t %q %t", pick.Stamp, fm.Accelerator, fm.Nodes, fm.Interconnect, fm.Kind, fm.GPUs,
		fm.MaxPrice, fm.Community, fm.Sort, p.GPUsDefaulted)
	if b, ok := h.renders.get(key); ok && shared {
		return b, key, nil
	}
	groups := pick.Groups()
	p.Groups, p.Startable, p.Shown = offerGroupViews(groups, f)
	if price, ok := pick.CheapestOverCeiling(); ok && len(groups) == 0 {
		// O3: the empty answer of a price ceiling says what the cheapest
		// match costs, and lifts the ceiling to it (to the cent above).
		ceil := (price + 9_999) / 10_000 * 10_000
		p.CheapestMatch, p.LiftURL = models.USD(ceil), p.Form.URLWithCeiling(models.DecimalUSD(ceil))
	}
	p.QuoteGroups = quoteGroupViews(groups, p.Groups)
	if at, stale := pick.Freshness(); !at.IsZero() {
		p.RefreshedAt, p.CatalogStale = at.UTC().Format("2006-01-02 15:04 UTC"), stale
	}
	if p.Volume != nil {
		for i := range p.Groups {
			for j := range p.Groups[i].Offers {
				p.Groups[i].Offers[j].Volume = p.Volume.ID
			}
		}
	}
	buf := pageBuffers.Get().(*bytes.Buffer)
	defer putPageBuffer(buf)
	if err := views.OfferResults(p).Render(c.Request().Context(), buf); err != nil {
		return nil, "", err
	}
	if !shared {
		return bytes.Clone(buf.Bytes()), "", nil
	}
	return h.renders.put(key, buf.Bytes()), key, nil
}

// quoteGroupViews is the "Needs a quote" section's groups in their order
// (models' QuoteRank): views of the same groups, sharing their rows.
func quoteGroupViews(groups []models.OfferGroup, all []views.OfferGroupView) []views.OfferGroupView {
	out := make([]views.OfferGroupView, 0, len(groups))
	for i, g := range groups {
		if g.QuoteRank >= 0 {
			out = append(out, all[i])
		}
	}
	slices.SortStableFunc(out, func(a, b views.OfferGroupView) int { return a.QuoteRank - b.QuoteRank })
	return out
}

// offerGroupViews points each row at its offer; the rows of every group
// share one slice. Each group's startable rows come first (models sorts
// them so); Startable counts them, and the page's.
func offerGroupViews(groups []models.OfferGroup, f models.OfferFilter) (out []views.OfferGroupView, startable, shown int) {
	for _, g := range groups {
		shown += len(g.Offers)
	}
	out = make([]views.OfferGroupView, 0, len(groups))
	rows := make([]views.OfferRow, 0, shown)
	for _, g := range groups {
		start, n := len(rows), 0
		for i := range g.Offers {
			if g.Offers[i].SellFor(f.Nodes) == models.Startable {
				n++
			}
			rows = append(rows, views.OfferRow{Offer: &g.Offers[i], Nodes: f.Nodes})
		}
		startable += n
		out = append(out, views.OfferGroupView{Location: g.Location, LocationName: g.LocationName, Nodes: g.Nodes,
			Offers: rows[start:len(rows):len(rows)], Startable: n, QuoteRank: g.QuoteRank})
	}
	return out, startable, shown
}
