package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/models/nodespec"
	"github.com/clusterdeck/clusterdeck/models/readiness"
	"github.com/clusterdeck/clusterdeck/models/software"
	"gorm.io/gorm"
)

// lsf is a software declared only here: one value and one Register call.
// If launch validation, the install job or the check read software from
// anywhere but the registry, it would not get from launch to ready.
var lsf = software.Software{
	Name: "lsf", Label: "LSF", Help: "A scheduler only this test knows.",
	Kinds:  []string{nodespec.KindVM, nodespec.KindBareMetal},
	Window: 10 * time.Minute,
	Install: func(in software.Input) software.Install {
		return software.Install{Files: map[string]string{"/etc/lsf/lsf.conf": fmt.Sprintf("hosts=%d\n", len(in.Spec.Nodes))},
			Script: fmt.Sprintf("lsf-install --rank %d\n", in.Rank)}
	},
	CheckCommand: "lsf-hosts",
	Judge: func(output string, c nodespec.Cluster) (readiness.Report, error) {
		r := readiness.Report{Software: "lsf", Ready: true}
		for _, n := range c.Nodes {
			ok := strings.Contains(output, n.Name+" ok")
			r.Nodes = append(r.Nodes, readiness.NodeResult{Node: n.Name, OK: ok})
			r.Ready = r.Ready && ok
		}
		r.Summary = fmt.Sprintf("%d nodes judged", len(r.Nodes))
		return r, nil
	},
}

// A new software is one declaration and one registry line; it
// flows through launch validation (S1), the install job's tasks and its
// own check (S2, L5) with nothing else knowing its name.
func TestRegistryIsTheOnlyPlace(t *testing.T) {
	if fe := models.ValidateSoftware("lsf", "vm"); fe == nil {
		t.Fatal("an unregistered software passed launch validation")
	}
	t.Cleanup(software.Register(&lsf))
	if fe := models.ValidateSoftware("lsf", "vm"); fe != nil {
		t.Fatalf("registered software refused: %v", fe)
	}
	if fe := models.ValidateSoftware("lsf", "container"); fe["software"] != "LSF needs vm or bare_metal machines; this offer runs containers" {
		t.Errorf("lsf on containers: %v", fe)
	}
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		c := w.untilInstalling(w.launchWith("H100_80GB", 2, 8, "lsf").ID)
		if run, _ := w.store.SoftwareRunFor(ctx, c); run.Deadline.Sub(run.StartedAt) != lsf.Window {
			t.Errorf("install window %s, want lsf's %s", run.Deadline.Sub(run.StartedAt), lsf.Window)
		}
		// Act as both agents over the protocol until the check is planned.
		take := func(rank int) models.SoftwareTask {
			t.Helper()
			code, body := w.post(w.token(c, rank), "/v1/agent/heartbeat", struct{}{})
			var hb struct {
				Task *struct {
					ID, Kind, Script string
					Files            map[string]string
				}
			}
			if err := json.Unmarshal([]byte(body), &hb); code != 200 || err != nil || hb.Task == nil {
				t.Fatalf("node-%d heartbeat: %d %s", rank, code, body)
			}
			for _, tk := range w.tasks(c.ID, 1) {
				if tk.ID == hb.Task.ID {
					return tk
				}
			}
			t.Fatalf("task %s not stored", hb.Task.ID)
			return models.SoftwareTask{}
		}
		answer := func(rank int, tk models.SoftwareTask, output string) {
			t.Helper()
			if code, body := w.post(w.token(c, rank), "/v1/agent/tasks/"+tk.ID, map[string]any{"ok": true, "output": output}); code != 200 {
				t.Fatalf("node-%d result: %d %s", rank, code, body)
			}
			if err := w.install.Run(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for rank := range 2 {
			tk := take(rank)
			p := tk.Decode()
			if tk.Kind != models.TaskInstall || p.Files["/etc/lsf/lsf.conf"] != "hosts=2\n" ||
				!strings.Contains(p.Script, fmt.Sprintf("lsf-install --rank %d", rank)) || p.Files["/etc/clusterdeck/env"] == "" {
				t.Fatalf("node-%d install task %s: %+v", rank, tk.Kind, p)
			}
			answer(rank, tk, "installed")
		}
		check := take(0)
		if check.Kind != models.TaskCheck || strings.TrimSpace(check.Decode().Script) != "lsf-hosts" {
			t.Fatalf("check task %s: %q", check.Kind, check.Decode().Script)
		}
		answer(0, check, "node-0 ok\n")
		if got := w.cluster(c.ID); got.Status != models.StatusInstalling {
			t.Fatalf("one node of two ok: status %s, want installing", got.Status)
		}
		answer(0, take(0), "node-0 ok\nnode-1 ok\n")
		got := w.cluster(c.ID)
		if got.Status != models.StatusReady || !strings.Contains(w.events(c.ID), "LSF passed its check on every node (2 nodes judged)") {
			t.Fatalf("status %s\n%s", got.Status, w.events(c.ID))
		}
	})
}
