package main

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/lambda/fake"
)

// LAMBDA_* reach the adapter: PROVIDERS=lambda registers it with the key
// and API URL from the environment (here a fake Lambda on loopback).
func TestBuildProvidersLambda(t *testing.T) {
	f := fake.New("secret_key_1", time.Now)
	srv := httptest.NewServer(f)
	defer srv.Close()
	env := map[string]string{"PROVIDERS": "lambda", "LAMBDA_API_KEY": "secret_key_1", "LAMBDA_API_URL": srv.URL,
		"LAMBDA_AGENT_URL": "https://deck.example.com/clusterdeck"}
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
