package mcpserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// X16, API5: wait_for_cluster blocks until the cluster is
// ready, sending a progress notification when it starts waiting and one
// per event, over every way in (stdio, /mcp, in memory); list_events
// pages the feed, scoped like the REST API.
func TestWaitForClusterAndListEvents(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		ctx := context.Background()
		progress := make(chan *mcp.ProgressNotificationParams, 64)
		d.clientOpts = &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			progress <- r.Params
		}}
		stranger := d.signup("stranger@example.com", "Strangers", 0)
		for i, w := range ways {
			cs := mustConnect(t, w, d, d.key)
			qid := str(ok(t, cs, "quote_cluster", map[string]any{"accelerator": "H100_80GB", "nodes": 2, "gpus_per_node": 8}).data["id"])
			// The wait and the feed, not verification (X13): verify false.
			id := str(ok(t, cs, "launch_cluster", map[string]any{"quote_id": qid, "name": fmt.Sprintf("waited-%d", i), "verify": false}).data["id"])

			token := fmt.Sprintf("wait-%s", w.name)
			done := make(chan *mcp.CallToolResult, 1)
			go func() {
				params := &mcp.CallToolParams{Name: "wait_for_cluster", Arguments: map[string]any{"cluster_id": id, "timeout_seconds": 120}}
				params.SetProgressToken(token)
				res, err := cs.CallTool(ctx, params)
				if err != nil {
					t.Errorf("%s: wait_for_cluster: %v", w.name, err)
				}
				done <- res
			}()
			limit := time.After(60 * time.Second)
			var notes []string
			var res *mcp.CallToolResult // the call's answer, once it came
			nextNote := func() *mcp.ProgressNotificationParams {
				t.Helper()
				for {
					select {
					case p := <-progress:
						if p.ProgressToken != token {
							t.Errorf("%s: progress token %v, want %s", w.name, p.ProgressToken, token)
						}
						notes = append(notes, p.Message)
						return p
					case r := <-done: // its last notification may still be on its way
						res, done = r, nil
					case <-limit:
						t.Fatalf("%s: no progress notification; so far %v", w.name, notes)
					}
				}
			}
			if p := nextNote(); p.Progress != 0 || !strings.Contains(p.Message, id+" is provisioning; waiting") {
				t.Errorf("%s: first notification %+v", w.name, p)
			}
			checkWaiting := func() {
				t.Helper()
				if res != nil {
					t.Fatalf("%s: wait_for_cluster returned before the cluster was ready: %v (progress: %v)", w.name, res.Content, notes)
				}
			}

			// Every event while it waits is one notification, in order.
			var placed []models.PlacedNode
			for r := 0; r < 2; r++ {
				placed = append(placed, models.PlacedNode{Rank: r, ProviderNodeID: fmt.Sprintf("m%d", r), PrivateIP: fmt.Sprintf("10.77.0.%d", r+1)})
			}
			if err := d.store.MarkPlaced(ctx, id, placed); err != nil {
				t.Fatal(err)
			}
			if p := nextNote(); p.Progress != 1 || !strings.Contains(p.Message, "reserved") {
				t.Errorf("%s: placed: %+v", w.name, p)
			}
			step := 1
			for r := 0; r < 2; r++ {
				for _, s := range models.ProvisionSteps {
					if _, err := d.store.MarkNodeStep(ctx, id, r, s, fmt.Sprintf("node-%d passed %s", r, s)); err != nil {
						t.Fatal(err)
					}
					step++
					if p := nextNote(); p.Progress != float64(step) || !strings.Contains(p.Message, fmt.Sprintf("node-%d passed %s", r, s)) {
						t.Errorf("%s: step %d: %+v", w.name, step, p)
					}
				}
			}
			checkWaiting()
			if _, err := d.store.MarkJoined(ctx, id, nil); err != nil {
				t.Fatal(err)
			}
			if p := nextNote(); !strings.Contains(p.Message, id+" is ready: cluster.ready") {
				t.Errorf("%s: ready: %+v", w.name, p)
			}
			if res == nil {
				select {
				case res = <-done:
				case <-limit:
					t.Fatalf("%s: wait_for_cluster did not return once ready", w.name)
				}
			}
			if res == nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "is ready") {
				t.Fatalf("%s: result %+v", w.name, res)
			}

			// A status it does not reach: the timeout says so; nothing is an error.
			r := ok(t, cs, "wait_for_cluster", map[string]any{"cluster_id": id, "statuses": []string{"terminated"}, "timeout_seconds": 1})
			if !strings.Contains(r.text, "is still ready after 1s") || r.data["status"] != "ready" {
				t.Errorf("%s: timeout: %s", w.name, r.text)
			}
			callTool(t, cs, "wait_for_cluster", map[string]any{"cluster_id": id, "statuses": []string{"running"}})

			// list_events: the cluster's events with their types, paged by cursor.
			all := ok(t, cs, "list_events", map[string]any{"cluster_id": id, "limit": 500})
			evs := all.data["events"].([]any)
			types := map[string]bool{}
			for _, e := range evs {
				types[str(e.(map[string]any)["type"])] = true
			}
			if len(evs) != 1+1+6+1 || !types["cluster.provisioning"] || !types["cluster.ready"] || !strings.Contains(all.text, "that is all for now") {
				t.Errorf("%s: list_events: %d %v %s", w.name, len(evs), types, all.text)
			}
			first := ok(t, cs, "list_events", map[string]any{"cluster_id": id, "limit": 2})
			if n := len(first.data["events"].([]any)); n != 2 || first.data["hasMore"] != true || !strings.Contains(first.text, "more are waiting") {
				t.Errorf("%s: first page: %d %s", w.name, n, first.text)
			}
			rest := ok(t, cs, "list_events", map[string]any{"cluster_id": id, "after": first.data["next"]})
			if n := len(rest.data["events"].([]any)); n != len(evs)-2 {
				t.Errorf("%s: after the first page: %d events, want %d", w.name, n, len(evs)-2)
			}

			// Another organisation's key: not found, for both tools.
			other := mustConnect(t, w, d, stranger.key)
			refused(t, other, "list_events", map[string]any{"cluster_id": id}, "not_found")
			refused(t, other, "wait_for_cluster", map[string]any{"cluster_id": id}, "not_found")
			if r := ok(t, other, "list_events", map[string]any{}); len(r.data["events"].([]any)) != 0 {
				t.Errorf("%s: another organisation sees %v", w.name, r.data["events"])
			}
		}
	})
}
