package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// X16: `gpu events --follow` prints each event of the key's
// environment as it is written, with its type; --json prints one Event
// per line; --cluster keeps one cluster's; without --follow the events
// after the cursor and the next cursor.
func TestCLIEventsFollow(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		out, errOut, done := d.background(ctx, "events", "--follow")
		cl := d.launch(t, "followed")
		out.waitFor(t, regexp.MustCompile(`evt_[0-9a-z]{26}  `+cl.ID+`  cluster\.provisioning  .*Launch requested`), done)

		jctx, jcancel := context.WithCancel(context.Background())
		defer jcancel()
		other := d.launch(t, "other")
		jout, _, jdone := d.background(jctx, "events", "--follow", "--json", "--cluster", other.ID)
		d.join(t, cl.ID, 2)
		out.waitFor(t, regexp.MustCompile(`node-1 mesh:  node-1 passed mesh`), done)
		out.waitFor(t, regexp.MustCompile(cl.ID+`  cluster\.ready  `), done)
		d.join(t, other.ID, 2)
		jout.waitFor(t, regexp.MustCompile(`"type":"cluster.ready"`), jdone)
		var types []string
		for _, line := range strings.Split(strings.TrimSpace(jout.String()), "\n") {
			var e struct {
				ID, Type, Cluster string
			}
			if err := json.Unmarshal([]byte(line), &e); err != nil || !strings.HasPrefix(e.ID, "evt_") {
				t.Fatalf("--json: not an event per line (%v): %q", err, line)
			}
			if e.Cluster != other.ID {
				t.Errorf("--cluster %s printed %s's event", other.ID, e.Cluster)
			}
			if e.Type != "" {
				types = append(types, e.Type)
			}
		}
		if strings.Join(types, ",") != "cluster.provisioning,cluster.ready" {
			t.Errorf("--json types: %v", types)
		}

		cancel()
		jcancel()
		if code := waitExit(t, done, out, errOut); code != 130 {
			t.Errorf("Ctrl-C: exit %d", code)
		}
		waitExit(t, jdone, jout, errOut)

		// Without --follow: what is there, and the cursor to go on from.
		all, stderr, code := d.gpu(t, "events")
		if code != 0 || strings.Count(all, "cluster.ready") != 2 || !strings.Contains(stderr, "Next: clusterdeck gpu events --after ") {
			t.Fatalf("events: %d\n%s\n%s", code, all, stderr)
		}
		next := regexp.MustCompile(`--after (evt_[0-9a-z]{26})`).FindStringSubmatch(stderr)[1]
		if rest, _, code := d.gpu(t, "events", "--after", next); code != 0 || rest != "" {
			t.Errorf("after the last: %d %q", code, rest)
		}
		if _, stderr, code := d.gpu(t, "events", "--cluster", "cl_nope"); code != 1 || !strings.Contains(stderr, "not_found") {
			t.Errorf("unknown cluster: %d %s", code, stderr)
		}
	})
}

// X16: launch --wait follows the cluster through the event
// stream: with a poll interval of an hour it still ends as soon as the
// cluster is ready.
func TestGPULaunchWaitFollowsTheStream(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		qout, _, _ := d.gpu(t, "clusters", "quote", "--accelerator", "H100_80GB", "--nodes", "2", "--gpus-per-node", "8", "--location", "us-east", "--json")
		qid := mustJSON(t, "quote", qout)["id"].(string)
		out, errOut, done := d.background(context.Background(), "clusters", "launch", "--quote-id", qid, "--name", "streamed",
			"--wait", "--poll-interval", "1h")
		id := out.waitFor(t, launchedRE, done)[1]
		out.waitFor(t, regexp.MustCompile(`status: provisioning`), done)
		d.join(t, id, 2)
		if code := waitExit(t, done, out, errOut); code != 0 {
			t.Fatalf("launch --wait: exit %d\n%s\n%s", code, out, errOut)
		}
		mustContain(t, "launch --wait", out.String(), "node-1 mesh:  node-1 passed mesh", "status: ready", "Cluster "+id+" is ready")
	})
}
