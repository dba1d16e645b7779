package web

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// API4: AI Reserve's launch body, as its document writes it (quoteId, env,
// sshKeyIds, plus its orchestrator and dockerStartCmd), launches the cluster
// it asks for; ours and theirs for one field with different values is a 422
// naming both, and nothing is launched.
func TestAPILaunchAIReserveDialect(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("ar@example.com", "Reservists")
		tok := apiKeyFor(t, app, acc)
		key, err := app.store.AddSSHKey(ctx, acc.org.ID, acc.user.ID, "laptop", testSSHKey(t, "ar@laptop"))
		if err != nil {
			t.Fatal(err)
		}
		h200 := testOffer("h200x8", "us-east", 8, 3_000_000, intp(20))
		h200.Accelerator = "H200_141GB"
		app.seedOffers(h200)
		app.store.Deposit(ctx, acc.org.ID, 500*models.Micro, "dep", "t")
		quote := func() string {
			code, q := apiJSON(t, app, "POST", "/v1/gpu/clusters/quote", tok,
				`{"accelerator":"H200_141GB","nodes":2,"gpusPerNode":8,"storage":{"persistentGb":1000},"maxHourlyPrice":"100"}`)
			if code != http.StatusCreated {
				t.Fatalf("the document's quote: %d %v", code, q)
			}
			return q["id"].(string)
		}

		qid := quote()
		body := fmt.Sprintf(`{"quoteId":%q,"env":{"HF_TOKEN":"hf_x"},"sshKeyIds":[%q],"orchestrator":"slurm","dockerStartCmd":"python train.py"}`, qid, key.ID)
		code, cl := apiJSON(t, app, "POST", "/v1/gpu/clusters", tok, body, "Idempotency-Key", "launch-kimi-2026-10-13")
		if code != http.StatusCreated || cl["software"] != "slurm" || cl["accelerator"] != "H200_141GB" || cl["nodeCount"] != 2.0 {
			t.Fatalf("AI Reserve's launch body: %d %v", code, cl)
		}
		got, err := app.store.ClusterForOrg(ctx, acc.org.ID, cl["id"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if got.Software != "slurm" || got.StartCommand != "python train.py" || got.Env()["HF_TOKEN"] != "hf_x" ||
			len(got.SSHKeys()) != 1 || got.SSHKeys()[0] != key.PublicKey || got.QuoteID != qid {
			t.Errorf("stored cluster: software %q, start %q, env %v, keys %v, quote %s", got.Software, got.StartCommand, got.Env(), got.SSHKeys(), got.QuoteID)
		}

		// Both names with the same value is one value; with different values, a 422 naming both.
		same := fmt.Sprintf(`{"quoteId":%q,"software":"ray","orchestrator":"ray","startCommand":"a","dockerStartCmd":"a"}`, quote())
		if code, cl := apiJSON(t, app, "POST", "/v1/gpu/clusters", tok, same); code != http.StatusCreated || cl["software"] != "ray" {
			t.Errorf("both names, one value: %d %v", code, cl)
		}
		before, _ := app.store.ClustersForOrg(ctx, acc.org.ID)
		for _, tc := range []struct{ body, ours, theirs string }{
			{`"software":"ray","orchestrator":"slurm"`, "software", "orchestrator"},
			{`"startCommand":"a","dockerStartCmd":"b"`, "startCommand", "dockerStartCmd"},
		} {
			code, out := apiJSON(t, app, "POST", "/v1/gpu/clusters", tok, fmt.Sprintf(`{"quoteId":%q,%s}`, quote(), tc.body))
			e, _ := out["error"].(map[string]any)
			fields, _ := e["fields"].(map[string]any)
			if code != http.StatusUnprocessableEntity || fields[tc.ours] == nil || fields[tc.theirs] == nil {
				t.Errorf("%s: %d %v", tc.body, code, out)
			}
		}
		if after, _ := app.store.ClustersForOrg(ctx, acc.org.ID); len(after) != len(before) {
			t.Errorf("a refused body launched: %d clusters, were %d", len(after), len(before))
		}
	})
}
