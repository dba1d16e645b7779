package mcpserver_test

import (
	"strings"
	"testing"
)

// V1–V3 through the tools: create_volume, list_volumes, quote_cluster with
// its volume_id (pinned to its location), delete_volume; bad input is a
// tool error with the field.
func TestVolumeTools(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		cs := mustConnect(t, ways[0], d, d.key)
		if r := callTool(t, cs, "create_volume", map[string]any{"name": "Bad Name", "location": "x", "size_gb": 0}); !r.isError || !strings.Contains(r.text, "name") {
			t.Errorf("bad create: %s", r.text)
		}
		r := ok(t, cs, "create_volume", map[string]any{"name": "ckpt", "location": "test-1", "size_gb": 100})
		id, _ := r.data["id"].(string)
		if id == "" || !strings.Contains(r.text, "billed $") {
			t.Fatalf("create_volume: %v %s", r.data, r.text)
		}
		l := ok(t, cs, "list_volumes", map[string]any{})
		if vs, _ := l.data["volumes"].([]any); len(vs) != 1 {
			t.Errorf("list_volumes: %v", l.data)
		}
		q := ok(t, cs, "quote_cluster", map[string]any{"accelerator": "H100_80GB", "nodes": 2, "gpus_per_node": 8, "volume_id": id})
		if q.data["volumeId"] != id || q.data["location"] != "test-1" {
			t.Errorf("quote with the volume: %v", q.data)
		}
		if r := ok(t, cs, "delete_volume", map[string]any{"volume_id": id}); !strings.Contains(r.text, "deleted") {
			t.Errorf("delete_volume: %s", r.text)
		}
		if r := callTool(t, cs, "delete_volume", map[string]any{"volume_id": id}); !r.isError || !strings.Contains(r.text, "not_found") {
			t.Errorf("delete twice: %s", r.text)
		}
	})
}
