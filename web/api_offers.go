package web

import (
	"net/http"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

// offerJSON is one offer in the API, with the seeds' field names. Money is a
// decimal string of dollars exact to the micro-dollar.
type offerJSON struct {
	ID                string    `json:"id"`
	Provider          string    `json:"provider"`
	Location          string    `json:"location"`
	LocationName      string    `json:"locationName"`
	Interconnect      string    `json:"interconnect"`
	MachineKind       string    `json:"machineKind"`
	Accelerator       string    `json:"accelerator"`
	GPUsPerNode       int       `json:"gpusPerNode"`
	VCPUs             int       `json:"vcpus"`
	MemoryGB          int       `json:"memoryGb"`
	Community         bool      `json:"community"`
	NodesAvailable    *int      `json:"nodes_available"`
	MaxNodes          int       `json:"max_nodes"`
	Nodes             int       `json:"nodes"`
	Availability      string    `json:"availability"` // available | reserved_ahead | not_in_stock
	USDPerMachineHour string    `json:"usdPerMachineHour"`
	USDPerHour        string    `json:"usdPerHour"`
	PerGPUUSDPerHour  string    `json:"perGpuUsdPerHour"`
	DiskGBPerNode     int       `json:"diskGbPerNode"`
	RootDiskRate      string    `json:"rootDiskRate"` // dollars per GB-hour
	RefreshedAt       time.Time `json:"refreshedAt"`
}

type offerGroupJSON struct {
	Location     string      `json:"location"`
	LocationName string      `json:"locationName"`
	Nodes        int         `json:"nodes"`
	Offers       []offerJSON `json:"offers"`
}

type offersResponse struct {
	Accelerator      string           `json:"accelerator,omitempty"`
	Nodes            int              `json:"nodes"`
	IncludeCommunity bool             `json:"include_community"`
	Count            int              `json:"count"`
	Groups           []offerGroupJSON `json:"groups"`
}

func toOfferJSON(o models.Offer, n int) offerJSON {
	return offerJSON{
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
	resp := offersResponse{Accelerator: f.Accelerator, Nodes: f.Nodes, IncludeCommunity: f.IncludeCommunity,
		Groups: make([]offerGroupJSON, 0, len(groups))}
	for _, g := range groups {
		gj := offerGroupJSON{Location: g.Location, LocationName: g.LocationName, Nodes: g.Nodes}
		for _, o := range g.Offers {
			gj.Offers = append(gj.Offers, toOfferJSON(o, f.Nodes))
		}
		resp.Count += len(gj.Offers)
		resp.Groups = append(resp.Groups, gj)
	}
	return c.JSON(http.StatusOK, resp)
}
