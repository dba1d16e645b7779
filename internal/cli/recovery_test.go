package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// R3, R5, API3: "clusters recovery" sets the policy through the API (field
// errors exit 1 and change nothing); "clusters recover" asks for one
// attempt and is refused while no machine is down; "clusters get" shows
// the recovery object.
func TestCLIRecovery(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		ctx := context.Background()
		cl := d.launch(t, "train")
		d.join(t, cl.ID, 2)

		_, errOut, code := d.gpu(t, "clusters", "recovery", cl.ID, "--mode", "restart", "--max-attempts", "11")
		if code != 1 || !strings.Contains(errOut, "maxAttempts") {
			t.Fatalf("bad policy: %d %s", code, errOut)
		}
		if got, _ := d.store.ClusterByID(ctx, cl.ID); got.RecoveryMode != "" {
			t.Fatal("a refused policy changed the cluster")
		}
		out, errOut, code := d.gpu(t, "clusters", "recovery", cl.ID, "--mode", "restart", "--max-attempts", "4", "--cooldown-minutes", "10")
		if code != 0 || !strings.Contains(out, "restart, 4 attempts per episode, 10 minutes apart") {
			t.Fatalf("set policy: %d %s %s", code, out, errOut)
		}
		if _, errOut, code := d.gpu(t, "clusters", "recover", cl.ID); code != 1 || !strings.Contains(errOut, "nothing_to_recover") {
			t.Errorf("recover a healthy cluster: %d %s", code, errOut)
		}
		if err := d.store.DB().Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusDegraded,
			"episode_started_at": d.clock.Now(), "degraded_from": "ready", "last_error": "node_down:node-1: stopped"}).Error; err != nil {
			t.Fatal(err)
		}
		if out, errOut, code := d.gpu(t, "clusters", "recover", cl.ID); code != 0 || !strings.Contains(out, "Recover now accepted") {
			t.Errorf("recover: %d %s %s", code, out, errOut)
		}
		if got, _ := d.store.ClusterByID(ctx, cl.ID); got.RecoverRequestedAt == nil {
			t.Error("the request was not recorded")
		}
		if out, _, _ := d.gpu(t, "clusters", "get", cl.ID); !strings.Contains(out, "unhealthy since") {
			t.Errorf("get shows no recovery:\n%s", out)
		}
	})
}
