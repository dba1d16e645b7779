package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// X17: train.yaml carries the API's field names; an unknown field (a typo)
// is refused naming it, not silently dropped.
func TestReadRunFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "train.yaml")
	if err := os.WriteFile(good, []byte(`name: llama
accelerator: H100_80GB
nodes: 8
gpusPerNode: 8
volumeGb: 2000
command: torchrun train.py
resumeCommand: torchrun train.py --resume latest
checkpointDir: ckpt
restartBudget: 5
finishRule: rank0
env:
  WANDB_PROJECT: llama
`), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := readRunFile(good)
	if err != nil || b.Nodes != 8 || b.Command != "torchrun train.py" || b.ResumeCommand != "torchrun train.py --resume latest" ||
		b.RestartBudget != 5 || b.FinishRule != "rank0" || b.Env["WANDB_PROJECT"] != "llama" || b.VolumeGB != 2000 {
		t.Fatalf("%+v %v", b, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("nodes: 2\nrestart_budget: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readRunFile(bad); err == nil || !strings.Contains(err.Error(), "restart_budget") {
		t.Errorf("unknown field: %v", err)
	}
}
