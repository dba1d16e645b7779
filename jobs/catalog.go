package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers"
)

// Catalog refreshes every enabled provider's offers into the database, so
// pages read the stored catalog and never wait on a provider (O6). A provider
// that fails keeps its previous rows, which go stale after the freshness window.
type Catalog struct {
	Store     *models.Store
	Providers providers.Registry
}

// Name implements Job.
func (j *Catalog) Name() string { return "catalog" }

// Run implements Job.
func (j *Catalog) Run(ctx context.Context) error {
	var errs []error
	for _, name := range j.Providers.Names() {
		p := j.Providers[name]
		// Stamped before asking: a placement the count may not show yet is
		// then held against it (models' stock.go), never missed.
		seen := j.Store.Now()
		offers, err := p.ListOffers(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: list offers: %w", name, err))
			continue
		}
		rows := make([]models.Offer, 0, len(offers))
		for _, o := range offers {
			rows = append(rows, offerRow(o))
		}
		if err := j.Store.ReplaceOffers(ctx, name, rows, seen); err != nil {
			errs = append(errs, fmt.Errorf("%s: store: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func offerRow(o providers.Offer) models.Offer {
	return models.Offer{
		ProviderOffer:  o.OfferID,
		Upstream:       o.Upstream,
		Location:       o.Location,
		LocationName:   o.LocationName,
		Interconnect:   o.Interconnect,
		NICs:           o.NICs,
		NICGbps:        o.NICGbps,
		MachineKind:    o.MachineKind,
		Accelerator:    o.Accelerator,
		GPUsPerNode:    o.GPUsPerNode,
		VCPUs:          o.VCPUs,
		MemoryGB:       o.MemoryGB,
		PerGPUHour:     models.Money(o.PerGPUHourUSD),
		RootDiskGB:     o.RootDiskGB,
		DiskGBHour:     models.Money(o.DiskGBHourUSD),
		Community:      o.Community,
		NodesAvailable: o.NodesAvailable,
		Available:      o.Available || (o.NodesAvailable != nil && *o.NodesAvailable > 0),
		BootSeconds:    int(o.BootTime.Seconds()),
		PublicIPs:      o.PublicIPs,
		Gateway:        o.Gateway,
	}
}
