package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/internal/agentbin"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/lambda/fake"
	rpfake "github.com/clusterdeck/clusterdeck/providers/runpod/fake"
	sffake "github.com/clusterdeck/clusterdeck/providers/shadeform/fake"
)

// LAMBDA_* reach the adapter: PROVIDERS=lambda registers it with the key
// and API URL from the environment (here a fake Lambda on loopback).
func TestBuildProvidersLambda(t *testing.T) {
	f := fake.New("secret_key_1", time.Now)
	srv := httptest.NewServer(f)
	defer srv.Close()
	env := map[string]string{"PROVIDERS": "lambda", "LAMBDA_API_KEY": "secret_key_1", "LAMBDA_SSH_KEY_NAME": "my-public-key", "LAMBDA_API_URL": srv.URL,
		"LAMBDA_AGENT_URL": "https://deck.example.com/clusterdeck", "LAMBDA_AGENT_SHA256": strings.Repeat("ab", 32)}
	cfg, err := loadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	c, err := buildProviders(cfg, models.RealClock{}, nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Registry.Names(); len(got) != 1 || got[0] != "lambda" {
		t.Fatalf("registry %v", got)
	}
	p, _ := c.Registry.Get("lambda")
	if err := p.TerminateGroup(context.Background(), "cl_none"); err != nil {
		t.Fatalf("the adapter reaches the configured API with the configured key: %v", err)
	}
	if f.Requests("GET /api/v1/instances") != 1 {
		t.Error("no request reached the fake")
	}
	// A wrong key is the auth class, so operators see why.
	env["LAMBDA_API_KEY"] = "wrong"
	cfg, _ = loadConfig(func(k string) string { return env[k] })
	c, _ = buildProviders(cfg, models.RealClock{}, nil, "test")
	p, _ = c.Registry.Get("lambda")
	if err := p.TerminateGroup(context.Background(), "cl_none"); err == nil || !isAuth(err) {
		t.Errorf("wrong key: %v", err)
	}
}

func isAuth(err error) bool { return errors.Is(err, providers.ErrAuth) }

// RUNPOD_* and SHADEFORM_* reach their adapters: each is registered with
// the key and API URL from the environment (fakes on loopback) and a wrong
// key is the auth class.
func TestBuildProvidersRunPodShadeform(t *testing.T) {
	rp := rpfake.New("secret_rp_1", time.Now)
	rpSrv := httptest.NewServer(rp)
	defer rpSrv.Close()
	sf := sffake.New("secret_sf_1", time.Now)
	sfSrv := httptest.NewServer(sf)
	defer sfSrv.Close()
	env := map[string]string{"PROVIDERS": "runpod,shadeform",
		"RUNPOD_API_KEY": "secret_rp_1", "RUNPOD_API_URL": rpSrv.URL, "RUNPOD_AGENT_URL": "https://deck.example.com/clusterdeck", "RUNPOD_AGENT_SHA256": strings.Repeat("ab", 32),
		"SHADEFORM_API_KEY": "secret_sf_1", "SHADEFORM_API_URL": sfSrv.URL + "/v1", "SHADEFORM_AGENT_URL": "https://deck.example.com/clusterdeck", "SHADEFORM_AGENT_SHA256": strings.Repeat("ab", 32),
		"RUNPOD_SSH_KEY": " ssh-ed25519 AAAAoperator op@desk ", "SHADEFORM_SSH_KEY_ID": "78a0dd5a-dbb1-4568-b55c-5e7e0a8b0c40"}
	cfg, err := loadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	// The operator's keys (A3): the one each machine trusts beside its cluster's.
	if cfg.RunPod.SSHKey != "ssh-ed25519 AAAAoperator op@desk" || cfg.Shadeform.SSHKey != "78a0dd5a-dbb1-4568-b55c-5e7e0a8b0c40" {
		t.Errorf("operator keys: %q %q", cfg.RunPod.SSHKey, cfg.Shadeform.SSHKey)
	}
	bad := maps.Clone(env)
	bad["RUNPOD_SSH_KEY"] = "not-a-key"
	if _, err := loadConfig(func(k string) string { return bad[k] }); err == nil || !strings.Contains(err.Error(), "RUNPOD_SSH_KEY") {
		t.Errorf("a RUNPOD_SSH_KEY that is no public key: %v", err)
	}
	c, err := buildProviders(cfg, models.RealClock{}, nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Registry.Names(); len(got) != 2 || got[0] != "runpod" || got[1] != "shadeform" {
		t.Fatalf("registry %v", got)
	}
	for _, name := range []string{"runpod", "shadeform"} {
		p, _ := c.Registry.Get(name)
		if err := p.TerminateGroup(context.Background(), "cl_none"); err != nil {
			t.Fatalf("%s reaches the configured API with the configured key: %v", name, err)
		}
	}
	if rp.Requests("GET /v2/pods") != 1 || sf.Requests("GET /instances") != 1 {
		t.Error("no request reached a fake")
	}
	env["RUNPOD_API_KEY"], env["SHADEFORM_API_KEY"] = "wrong", "wrong"
	cfg, _ = loadConfig(func(k string) string { return env[k] })
	c, _ = buildProviders(cfg, models.RealClock{}, nil, "test")
	for _, name := range []string{"runpod", "shadeform"} {
		p, _ := c.Registry.Get(name)
		if err := p.TerminateGroup(context.Background(), "cl_none"); !isAuth(err) {
			t.Errorf("%s, wrong key: %v", name, err)
		}
	}
}

// OP1: a cloud without <P>_AGENT_URL hands its machines this server's own
// binary (here AGENT_BINARY_DIR's) at BASE_URL/agent/<version>/… with its
// digest; with <P>_AGENT_URL, the operator's.
func TestAgentInstallDefaultsToTheServedBinary(t *testing.T) {
	dir := t.TempDir()
	data := []byte("the linux/amd64 binary")
	if err := os.WriteFile(filepath.Join(dir, "clusterdeck-linux-amd64"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AGENT_BINARY_DIR": dir, "BASE_URL": "https://deck.example.com"}
	cfg, err := loadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	ai, err := agentInstall(cfg, "RUNPOD", "", "")
	if err != nil || ai.URL != "https://deck.example.com/agent/"+digest[:12]+"/clusterdeck-linux-amd64" || ai.SHA256 != digest {
		t.Errorf("default: %+v %v", ai, err)
	}
	ai, err = agentInstall(cfg, "RUNPOD", "https://cdn.example.com/cd", "")
	if err != nil || ai.URL != "https://cdn.example.com/cd" || ai.SHA256 != "" {
		t.Errorf("operator's URL: %+v %v", ai, err)
	}
	cfg.AgentBinary = func() (*agentbin.Binary, error) { return nil, agentbin.ErrNone }
	if _, err := agentInstall(cfg, "RUNPOD", "", ""); err == nil || !strings.Contains(err.Error(), "RUNPOD_AGENT_URL") {
		t.Errorf("no binary to serve: %v", err)
	}
}
