package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"
)

// V1–V3, API3: "volumes create/list/get/grow/delete" over the real API; a
// bad size is the API's field error (exit 1); "clusters quote --volume-id"
// is pinned to the volume's location; grow and delete while a cluster holds
// the volume answer volume_attached (exit 1) and change nothing.
func TestCLIVolumes(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		out, errOut, code := d.gpu(t, "volumes", "list")
		if code != 0 || !strings.Contains(out, "No volumes") {
			t.Fatalf("empty list: %d %s %s", code, out, errOut)
		}
		if _, errOut, code := d.gpu(t, "volumes", "create", "--name", "ckpt", "--location", "us-east", "--size-gb", "0"); code != 1 || !strings.Contains(errOut, "sizeGb") {
			t.Errorf("bad size: %d %s", code, errOut)
		}
		out, errOut, code = d.gpu(t, "volumes", "create", "--name", "ckpt", "--location", "eu-west", "--size-gb", "200")
		if code != 0 {
			t.Fatalf("create: %d %s", code, errOut)
		}
		id := regexp.MustCompile(`vol_[a-z0-9]+`).FindString(out)
		mustContain(t, "create", out, "200 GB", "eu-west", "detached, still billing")
		out, _, _ = d.gpu(t, "volumes", "list")
		mustContain(t, "list", out, id, "ckpt", "eu-west", "200 GB")

		// us-east is cheaper, but the volume pins the quote to eu-west.
		out, errOut, code = d.gpu(t, "clusters", "quote", "--accelerator", "H100_80GB", "--nodes", "2", "--gpus-per-node", "8", "--volume-id", id)
		if code != 0 {
			t.Fatalf("quote with the volume: %d %s", code, errOut)
		}
		mustContain(t, "quote", out, "at eu-west", "Volume", id)
		qid := regexp.MustCompile(`qt_[a-z0-9]+`).FindString(out)
		out, errOut, code = d.gpu(t, "clusters", "launch", "--quote-id", qid, "--name", "mounted")
		if code != 0 {
			t.Fatalf("launch: %d %s %s", code, out, errOut)
		}
		for _, args := range [][]string{{"volumes", "grow", id, "--size-gb", "400"}, {"volumes", "delete", id}} {
			if _, errOut, code := d.gpu(t, args...); code != 1 || !strings.Contains(errOut, "volume_attached") || !strings.Contains(errOut, "mounted") {
				t.Errorf("%v while attached: %d %s", args, code, errOut)
			}
		}
		v, err := d.store.VolumeForOrg(context.Background(), d.org.ID, id)
		if err != nil || v.SizeGB != 200 || v.ClusterID == "" {
			t.Fatalf("volume after refusals: %+v %v", v, err)
		}
		if _, err := d.store.MarkTerminated(context.Background(), v.ClusterID); err != nil {
			t.Fatal(err)
		}
		if out, errOut, code := d.gpu(t, "volumes", "grow", id, "--size-gb", "400"); code != 0 || !strings.Contains(out, "now 400 GB") {
			t.Errorf("grow: %d %s %s", code, out, errOut)
		}
		if out, _, code := d.gpu(t, "volumes", "get", id, "--json"); code != 0 || mustJSON(t, "get --json", out)["sizeGb"].(float64) != 400 {
			t.Errorf("get --json: %d %s", code, out)
		}
		if out, errOut, code := d.gpu(t, "volumes", "delete", id); code != 0 || !strings.Contains(out, "deleted") {
			t.Errorf("delete: %d %s %s", code, out, errOut)
		}
		if _, errOut, code := d.gpu(t, "volumes", "get", id); code != 1 || !strings.Contains(errOut, "not_found") {
			t.Errorf("get after delete: %d %s", code, errOut)
		}
		if _, _, code := d.gpu(t, "volumes", "shrink"); code != 2 {
			t.Errorf("unknown volumes command: exit %d", code)
		}
	})
}
