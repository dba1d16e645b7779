package web

import (
	"net/http"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

func toOfferJSON(o models.Offer, n int) api.Offer {
	return api.Offer{
		ID: o.ID, Provider: o.Provider, Location: o.Location, LocationName: o.LocationName,
		Interconnect: o.Interconnect, MachineKind: o.MachineKind, Accelerator: o.Accelerator,
		GPUsPerNode: o.GPUsPerNode, VCPUs: o.VCPUs, MemoryGB: o.MemoryGB, Community: o.Community,
		NodesAvailable: o.NodesAvailable, MaxNodes: o.MaxNodes(), Nodes: n,
		Availability:      string(o.SellFor(n)),
		USDPerMachineHour: models.DecimalUSD(o.MachineHour()),
		USDPerHour:        models.DecimalUSD(o.ClusterHour(n)),
		PerGPUUSDPerHour:  models.DecimalUSD(o.PerGPUHour),
		DiskGBPerNode:     o.RootDiskGB,
		RootDiskRate:      models.DecimalUSD(o.DiskGBHour),
		RefreshedAt:       o.RefreshedAt,
	}
}

// apiListOffers is GET /v1/gpu/offers: the picker as JSON (API1).
func (h *handler) apiListOffers(c echo.Context) error {
	_, f, problems := offerQuery(c.QueryParams(), false)
	if len(problems) > 0 {
		return invalid(problems)
	}
	groups, err := h.Store.PickOffers(c.Request().Context(), f)
	if err != nil {
		return err
	}
	resp := api.OffersResponse{Accelerator: f.Accelerator, Nodes: f.Nodes, IncludeCommunity: f.IncludeCommunity,
		Groups: make([]api.OfferGroup, 0, len(groups))}
	for _, g := range groups {
		gj := api.OfferGroup{Location: g.Location, LocationName: g.LocationName, Nodes: g.Nodes}
		for _, o := range g.Offers {
			gj.Offers = append(gj.Offers, toOfferJSON(o, f.Nodes))
		}
		resp.Count += len(gj.Offers)
		resp.Groups = append(resp.Groups, gj)
	}
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

// toPrivateOfferJSON is one of the organisation's private offers (X9).
func toPrivateOfferJSON(pk models.PrivatePick) api.PrivateOffer {
	return api.PrivateOffer{ID: pk.ID, OfferID: pk.OfferID, Provider: pk.Provider, Location: pk.Location,
		LocationName: pk.LocationName, Accelerator: pk.Accelerator, Interconnect: pk.Interconnect, MachineKind: pk.MachineKind,
		GPUsPerNode: pk.GPUsPerNode, Nodes: pk.Nodes, USDPerMachineHour: models.DecimalUSD(pk.Offer.MachineHour()),
		USDPerHour: models.DecimalUSD(pk.Offer.ClusterHour(pk.Nodes)), ValidUntil: pk.ValidUntil}
}
