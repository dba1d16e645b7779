package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
)

// privateOffer is X9 as the operator does it: a quote request of the deck's
// organisation (or orgID's), marked quoted, made a private offer of
// sim:h100x8 for nodes machines at price dollars per machine-hour.
func (d *deck) privateOffer(t *testing.T, orgID, userID string, nodes int, price string) models.PrivateOffer {
	t.Helper()
	ctx := context.Background()
	n := models.CapacityNotify{BaseURL: "http://127.0.0.1"}
	day := func(days int) string { return d.clock.Now().AddDate(0, 0, days).Format(time.DateOnly) }
	req, err := d.store.As(models.Actor{OrgID: orgID, UserID: userID, Role: models.RoleOwner, Name: "owner"}).RequestCapacity(ctx,
		models.QuoteRequestInput{Accelerator: "H100_80GB", Nodes: nodes, GPUsPerNode: 8, Fabric: "infiniband", StartDate: day(1),
			Duration: 2, DurationUnit: "weeks", Budget: "900", ContactName: "Owner", ContactEmail: "owner@example.com"}, n)
	if err != nil {
		t.Fatal(err)
	}
	op := d.store.As(models.Actor{UserID: "usr_operator", Name: "ops@clusterdeck.test"})
	if _, _, err := op.SetQuoteRequestStatus(ctx, req.ID, "quoted", "", n); err != nil {
		t.Fatal(err)
	}
	po, err := op.CreatePrivateOffer(ctx, models.PrivateOfferInput{RequestID: req.ID, OfferID: "sim:h100x8", Nodes: nodes,
		Price: price, ValidUntil: day(5)}, n)
	if err != nil {
		t.Fatal(err)
	}
	return po
}

// X9 from the command line: offers lists the organisation's
// private offers marked as its own (another organisation's key sees none);
// clusters quote and launch take --private-offer-id, filling in its shape,
// at its locked price; a shape other than its own is refused (exit 3).
func TestGPUPrivateOffers(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		ctx := context.Background()
		po := d.privateOffer(t, d.org.ID, d.user.ID, 4, "18.40")

		out, errOut, code := d.gpu(t, "offers", "--accelerator", "H100_80GB", "--nodes", "2")
		if code != 0 {
			t.Fatalf("offers: %d %s", code, errOut)
		}
		mustContain(t, "offers", out, "Your organisation's private offers (1)", "PRIVATE OFFER", po.ID+" (yours)", "4 × 8 GPUs H100_80GB",
			"$73.60/h", "$18.40/h", "--private-offer-id ID", "sim:h100x8")
		if !regexp.MustCompile(`(?s)private offers.*` + po.ID + `.*\n\S.*, 2 machines: \d+ offers`).MatchString(out) {
			t.Errorf("private offers are not above the public ones:\n%s", out)
		}
		out, _, _ = d.gpu(t, "offers", "--accelerator", "H100_80GB", "--json")
		if ps, _ := mustJSON(t, "offers", out)["privateOffers"].([]any); len(ps) != 1 {
			t.Errorf("offers --json: %s", out)
		}

		out, errOut, code = d.gpu(t, "clusters", "quote", "--private-offer-id", po.ID)
		if code != 0 {
			t.Fatalf("quote: %d %s", code, errOut)
		}
		mustContain(t, "quote", out, "4 × 8 GPUs H100_80GB at us-east", "$73.60/h for the whole cluster", "Private offer", po.ID)
		_, errOut, code = d.gpu(t, "clusters", "quote", "--private-offer-id", po.ID, "--accelerator", "H100_80GB", "--nodes", "2", "--gpus-per-node", "8")
		if code != 3 || !strings.Contains(errOut, "private_offer_shape") {
			t.Errorf("another size: %d %s", code, errOut)
		}
		_, errOut, code = d.gpu(t, "clusters", "quote", "--private-offer-id", "po_nope")
		if code != 1 || !strings.Contains(errOut, "po_nope is not one of your organisation's live private offers") {
			t.Errorf("unknown private offer: %d %s", code, errOut)
		}

		out, errOut, code = d.gpu(t, "clusters", "launch", "--private-offer-id", po.ID, "--name", "reserved", "--idempotency-key", "po-1")
		if code != 0 {
			t.Fatalf("launch: %d %s", code, errOut)
		}
		m := regexp.MustCompile(`Launched (cl_\w+) "reserved": 4 × 8 GPUs H100_80GB at us-east, \$73\.60/h`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("launch output:\n%s", out)
		}
		if cl, err := d.store.ClusterForOrg(ctx, d.org.ID, m[1]); err != nil || cl.MachineHour != 18_400_000 || cl.Nodes != 4 {
			t.Errorf("launched %+v, %v", cl, err)
		}

		// Another organisation sees none of it and cannot use it.
		u, other, err := d.store.Signup(ctx, models.SignupInput{Email: "rival@example.com", Name: "Rival", Password: "correct horse battery",
			OrgName: "Rival Labs"}, "192.0.2.2")
		if err != nil {
			t.Fatal(err)
		}
		env, _ := d.store.DefaultEnvironment(ctx, other.ID)
		_, d.key, err = d.store.CreateAPIKey(ctx, other.ID, env.ID, u.ID, "rival")
		if err != nil {
			t.Fatal(err)
		}
		out, _, _ = d.gpu(t, "offers", "--accelerator", "H100_80GB")
		if strings.Contains(out, po.ID) || strings.Contains(out, "private offers") {
			t.Errorf("another organisation sees the private offer:\n%s", out)
		}
		_, errOut, code = d.gpu(t, "clusters", "launch", "--private-offer-id", po.ID, "--accelerator", "H100_80GB", "--nodes", "4", "--gpus-per-node", "8")
		if code != 3 || !strings.Contains(errOut, "offer_not_found") {
			t.Errorf("another organisation launched it: %d %s", code, errOut)
		}
	})
}
