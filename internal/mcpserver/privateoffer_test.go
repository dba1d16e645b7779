package mcpserver_test

import (
	"strings"
	"testing"
)

// X9 through the tools: list_offers surfaces the organisation's
// private offers (in its answer and in the line the agent reads, with the
// quote_cluster arguments that use one), another organisation sees none of
// them, and quote_cluster with private_offer_id locks the private price;
// the quote launches like any other.
func TestPrivateOffersReachTheAgent(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		po := d.privateOffer(d.acct, 4, "18.40")
		rival := d.signup("rival@example.com", "Rival Labs", 100)
		for _, w := range ways {
			cs := mustConnect(t, w, d, d.key)
			offers := ok(t, cs, "list_offers", map[string]any{"accelerator": "H100_80GB", "nodes": 2})
			private, _ := offers.data["privateOffers"].([]any)
			if len(private) != 1 || !strings.Contains(offers.text, "private offers (1") ||
				!strings.Contains(offers.text, po.ID+": 4 × 8 GPUs H100_80GB at test-1") || !strings.Contains(offers.text, "$73.60/h for the whole cluster") ||
				!strings.Contains(offers.text, "quote_cluster private_offer_id="+po.ID+" accelerator=H100_80GB nodes=4 gpus_per_node=8") {
				t.Fatalf("%s: list_offers: %s", w.name, offers.text)
			}
			q := ok(t, cs, "quote_cluster", map[string]any{"accelerator": "H100_80GB", "nodes": 4, "gpus_per_node": 8, "private_offer_id": po.ID})
			if q.data["privateOfferId"] != po.ID || q.data["usdPerHour"] != "73.60" || !strings.Contains(q.text, "(private offer "+po.ID+")") {
				t.Errorf("%s: quote_cluster with the private offer: %s", w.name, q.text)
			}
			if w.name == "http" {
				l := ok(t, cs, "launch_cluster", map[string]any{"quote_id": str(q.data["id"]), "name": "private-run"})
				if l.data["usdPerHour"] != "73.60" || l.data["nodeCount"] != 4.0 {
					t.Errorf("launch from the private quote: %s", l.text)
				}
			}
			refused(t, cs, "quote_cluster", map[string]any{"accelerator": "H100_80GB", "nodes": 2, "gpus_per_node": 8, "private_offer_id": po.ID},
				"no_capacity", "reason: private_offer_shape")

			rcs := mustConnect(t, w, d, rival.key)
			theirs := ok(t, rcs, "list_offers", map[string]any{"accelerator": "H100_80GB", "nodes": 2})
			if theirs.data["privateOffers"] != nil || strings.Contains(theirs.text, po.ID) || strings.Contains(theirs.text, "private") {
				t.Errorf("%s: another organisation sees the private offer: %s", w.name, theirs.text)
			}
			refused(t, rcs, "quote_cluster", map[string]any{"accelerator": "H100_80GB", "nodes": 4, "gpus_per_node": 8, "private_offer_id": po.ID},
				"no_capacity", "reason: offer_not_found")
		}
	})
}
