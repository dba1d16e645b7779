package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// L10, X5, API3: "clusters add-worker" admits one more machine (the node
// reads joining); "clusters replace" refuses a machine that is not down,
// shows the machine-hour price without --yes and changes nothing, and
// replaces it with --yes.
func TestCLIJoin(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		ctx := context.Background()
		cl := d.launch(t, "train")
		d.join(t, cl.ID, 2)
		out, errOut, code := d.gpu(t, "clusters", "add-worker", cl.ID)
		if code != 0 || !strings.Contains(out, "Worker node-2 admitted for "+cl.ID) {
			t.Fatalf("add-worker: %d %s %s", code, out, errOut)
		}
		if got, _ := d.store.ClusterByID(ctx, cl.ID); got.Nodes != 3 {
			t.Fatalf("machines after add-worker = %d, want 3", got.Nodes)
		}
		if _, errOut, code := d.gpu(t, "clusters", "add-worker", cl.ID); code != 1 || !strings.Contains(errOut, "join_in_progress") {
			t.Errorf("second add-worker: %d %s", code, errOut)
		}

		other := d.launch(t, "other")
		d.join(t, other.ID, 2)
		if _, errOut, code := d.gpu(t, "clusters", "replace", other.ID, "--node", "1"); code != 1 || !strings.Contains(errOut, "not_replaceable") {
			t.Errorf("replace a running machine: %d %s", code, errOut)
		}
		if err := d.store.DB().Model(&models.ClusterNode{}).Where("cluster_id = ? AND rank = 1", other.ID).Update("status", models.NodeDown).Error; err != nil {
			t.Fatal(err)
		}
		price := models.DecimalUSD(other.MachineHour)
		out, errOut, code = d.gpu(t, "clusters", "replace", other.ID, "--node", "1")
		if code != 0 || !strings.Contains(out, "Run again with --yes to replace node-1 at $"+price+" per machine-hour") {
			t.Fatalf("replace preview: %d %s %s", code, out, errOut)
		}
		if got, _ := d.store.ClusterByID(ctx, other.ID); got.Joins != 0 {
			t.Fatal("the preview changed the cluster")
		}
		out, errOut, code = d.gpu(t, "clusters", "replace", other.ID, "--node", "1", "--yes")
		if code != 0 || !strings.Contains(out, "Replacement of node-1 accepted") {
			t.Fatalf("replace --yes: %d %s %s", code, out, errOut)
		}
		if nodes, _ := d.store.NodesFor(ctx, other.ID); nodes[1].Status != models.NodeJoining {
			t.Errorf("node-1 after replace: %s", nodes[1].Status)
		}
	})
}
