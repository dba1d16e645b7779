package cli

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
)

// offers is `gpu offers`: the picker (O3, O5).
func (c *gpuCLI) offers(args []string) error {
	fs := c.flagSet("offers", "offers --accelerator H100_80GB --nodes 4 [--include-community] [flags]")
	var q client.OffersQuery
	fs.StringVar(&q.Accelerator, "accelerator", "", "accelerator, e.g. H200_141GB, H100_80GB, A100_80GB, L40S, RTX_4090 (all when empty)")
	fs.IntVar(&q.Nodes, "nodes", 2, "machines in the cluster, 2–64 (prices are for the whole cluster)")
	fs.BoolVar(&q.IncludeCommunity, "include-community", false, "include community hosts (keep secrets off them)")
	fs.StringVar(&q.Interconnect, "interconnect", "", "ethernet, infiniband or roce")
	fs.StringVar(&q.MachineKind, "machine-kind", "", "vm, bare_metal or container")
	fs.IntVar(&q.GPUsPerNode, "gpus-per-node", 0, "GPUs per machine: 1, 2, 4 or 8")
	fs.StringVar(&q.MaxPrice, "max-price", "", "a ceiling in dollars per hour for the whole cluster")
	fs.StringVar(&q.Sort, "sort", "", "cluster_price (the default: cheapest whole cluster first), gpu_price (lowest $/GPU-h first) or track_record (recent launches at this size succeeded most often first)")
	if err := noArgs(fs, args, "use --accelerator and --nodes"); err != nil {
		return err
	}
	sdk, err := c.sdk(false)
	if err != nil {
		return err
	}
	var raw []byte
	out, err := sdk.Offers(c.ctx, q, client.Raw(&raw))
	if err != nil {
		return err
	}
	if c.json {
		c.printRaw(raw)
		return nil
	}
	printOffers(c.stdout, out)
	return nil
}

// shapeFlags are the priced fields (Q1), shared by quote and launch.
type shapeFlags struct {
	accelerator, maxHourlyPrice, location, offerID string
	privateOfferID, volumeID                       string
	nodes, gpusPerNode, persistentGB               int
	community                                      bool
}

func (s *shapeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.accelerator, "accelerator", "", "accelerator, e.g. H200_141GB, H100_80GB")
	fs.IntVar(&s.nodes, "nodes", 0, "machines, 2–64")
	fs.IntVar(&s.gpusPerNode, "gpus-per-node", 0, "GPUs per machine, 1–8")
	fs.IntVar(&s.persistentGB, "persistent-gb", 0, "create a persistent volume with the cluster, in GB (kept after terminate, billed until deleted)")
	fs.StringVar(&s.volumeID, "volume-id", "", "mount an existing volume (vol_…, from \"clusterdeck gpu volumes list\"); the cluster runs in its location")
	fs.StringVar(&s.maxHourlyPrice, "max-hourly-price", "", "a ceiling for the whole cluster in dollars per hour, e.g. 100")
	fs.StringVar(&s.location, "location", "", "a location id (else the cheapest that fits)")
	fs.StringVar(&s.offerID, "offer-id", "", "an offer id from \"clusterdeck gpu offers\"")
	fs.BoolVar(&s.community, "include-community", false, "allow community hosts (keep secrets off them)")
	fs.StringVar(&s.privateOfferID, "private-offer-id", "", "one of your organisation's private offers (po_…, listed by \"clusterdeck gpu offers\"), at its locked price; its shape is filled in")
}

// body is the priced fields the command line set; the others are not sent.
func (s *shapeFlags) body(set map[string]bool) api.QuoteBody {
	var b api.QuoteBody
	if set["accelerator"] {
		b.Accelerator = &s.accelerator
	}
	if set["nodes"] {
		b.Nodes = &s.nodes
	}
	if set["gpus-per-node"] {
		b.GPUsPerNode = &s.gpusPerNode
	}
	if set["persistent-gb"] {
		b.Storage = &api.Storage{PersistentGB: &s.persistentGB}
	}
	if set["max-hourly-price"] {
		p := strings.TrimPrefix(strings.TrimSpace(s.maxHourlyPrice), "$")
		b.MaxHourlyPrice = &p
	}
	if set["location"] {
		b.Location = &s.location
	}
	if set["offer-id"] {
		b.OfferID = &s.offerID
	}
	if set["include-community"] {
		b.IncludeCommunity = &s.community
	}
	if set["private-offer-id"] {
		b.PrivateOfferID = &s.privateOfferID
	}
	if set["volume-id"] {
		b.VolumeID = &s.volumeID
	}
	return b
}

// quote is `gpu clusters quote` (Q1–Q4).
func (c *gpuCLI) quote(args []string) error {
	fs := c.flagSet("quote", "clusters quote --accelerator A --nodes N --gpus-per-node G [flags]")
	var shape shapeFlags
	shape.register(fs)
	if err := noArgs(fs, args, "use --accelerator, --nodes and --gpus-per-node"); err != nil {
		return err
	}
	set := setFlags(fs)
	var missing []string
	for _, f := range []string{"accelerator", "nodes", "gpus-per-node"} {
		if !set[f] {
			missing = append(missing, "--"+f)
		}
	}
	if len(missing) > 0 && !set["private-offer-id"] {
		return usageError("quote needs " + strings.Join(missing, ", ") + " (or --private-offer-id ID)")
	}
	sdk, err := c.sdk(true)
	if err != nil {
		return err
	}
	body := shape.body(set)
	if len(missing) > 0 {
		if err := c.completeFromPrivateOffer(sdk, &body, shape.privateOfferID); err != nil {
			return err
		}
	}
	var raw []byte
	q, err := sdk.Quote(c.ctx, body, client.Raw(&raw))
	if err != nil {
		return err
	}
	if c.json {
		c.printRaw(raw)
		return nil
	}
	printQuote(c.stdout, q, time.Now())
	fmt.Fprintf(c.stdout, "\nLaunch it:  clusterdeck gpu clusters launch --quote-id %s --wait\n", q.ID)
	return nil
}

// completeFromPrivateOffer fills the accelerator, nodes and GPUs per
// machine the command line left out from the organisation's private offer
// id (X9): a private offer has one shape.
func (c *gpuCLI) completeFromPrivateOffer(sdk *client.Client, b *api.QuoteBody, id string) error {
	out, err := sdk.Offers(c.ctx, client.OffersQuery{})
	if err != nil {
		return err
	}
	for _, p := range out.PrivateOffers {
		if p.ID != id {
			continue
		}
		if b.Accelerator == nil {
			b.Accelerator = &p.Accelerator
		}
		if b.Nodes == nil {
			b.Nodes = &p.Nodes
		}
		if b.GPUsPerNode == nil {
			b.GPUsPerNode = &p.GPUsPerNode
		}
		return nil
	}
	return fmt.Errorf("private offer %s is not one of your organisation's live private offers (\"clusterdeck gpu offers\" lists them); or pass --accelerator, --nodes and --gpus-per-node", id)
}
