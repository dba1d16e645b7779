package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/api"
)

// The client against a scripted server: the request it sends and how it
// reads answers, errors and streams. The CLI's tests run it against the
// real server.
func TestClientCalls(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got = append(got, fmt.Sprintf("%s %s key=%s idem=%s %s", r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), r.Header.Get("Idempotency-Key"), body))
		switch r.URL.Path {
		case "/v1/gpu/clusters/quote":
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"error":{"code":"no_capacity","message":"No offer can start this shape now.","reason":"no_offer","shape":{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"storage":{"persistentGb":0},"include_community":false}}}`)
		case "/v1/gpu/clusters":
			if r.Header.Get("Idempotency-Key") == "again" {
				fmt.Fprint(w, `{"id":"cl_1","status":"provisioning","nodes":[]}`)
				return
			}
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"id":"cl_1","status":"provisioning","nodes":[]}`)
		case "/v1/gpu/clusters/cl_1/logs":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "id: 1\nevent: line\ndata: {\"id\":1,\"node\":\"node-0\",\"text\":\"hi\"}\n\n: keep-alive\n\nevent: end\ndata: ended\n\n")
		case "/v1/me":
			fmt.Fprint(w, "<html>not the API</html>")
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	c := New(srv.URL, "cdk_test")

	_, err := c.Quote(ctx, QuoteFor("H100_80GB", 2, 8))
	var ae *Error
	var shape api.Shape
	if !errors.As(err, &ae) || ae.Status != 409 || ae.Code != api.CodeNoCapacity || !ae.Refused() || !ae.Extra("shape", &shape) || shape.GPUsPerNode != 8 {
		t.Fatalf("no_capacity: %#v", err)
	}
	var raw []byte
	cl, created, err := c.Launch(ctx, api.LaunchBody{QuoteID: "qt_1"}, "first", Raw(&raw))
	if err != nil || !created || cl.ID != "cl_1" || !strings.Contains(string(raw), `"cl_1"`) {
		t.Fatalf("launch: %v %v %+v %s", err, created, cl, raw)
	}
	if _, created, err := c.Launch(ctx, api.LaunchBody{QuoteID: "qt_1"}, "again"); err != nil || created {
		t.Fatalf("launch again: %v %v", err, created)
	}
	s, err := c.FollowLogs(ctx, "cl_1", 0)
	if err != nil {
		t.Fatal(err)
	}
	first, err1 := s.Next()
	end, err2 := s.Next()
	_, err3 := s.Next()
	s.Close()
	if err1 != nil || !first.OK || first.Line.Text != "hi" || err2 != nil || !end.End || err3 != io.EOF {
		t.Fatalf("stream: %+v %v / %+v %v / %v", first, err1, end, err2, err3)
	}
	if _, err := c.Cluster(ctx, "cl_2"); !errors.As(err, &ae) || !ae.NotAPI || ae.Code != "http_404" {
		t.Fatalf("not found: %#v", err)
	}
	if err := c.do(ctx, "GET", "/v1/me", nil, nil, nil, nil, nil); !errors.Is(err, ErrNotJSON) {
		t.Fatalf("html: %v", err)
	}
	want := []string{
		`POST /v1/gpu/clusters/quote key=Bearer cdk_test idem= {"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8}`,
		`POST /v1/gpu/clusters key=Bearer cdk_test idem=first {"quoteId":"qt_1"}`,
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("request %d = %s, want %s", i, got[i], w)
		}
	}
}

// R3–R5: SetRecovery sends the whole policy, Recover asks for one attempt
// and reads nothing_to_recover as an *Error, Recovery reads the object.
func TestClientRecovery(t *testing.T) {
	var got []string
	cluster := `{"id":"cl_1","status":"degraded","nodes":[],"recovery":{"mode":"restart","maxAttempts":4,"cooldownMinutes":10,` +
		`"episodeStartedAt":"2026-11-30T12:00:00Z","attemptsUsed":1,"lastAttemptAt":null,"outcomes":[{"node":"node-1","outcome":"skipped","message":"host gone"}],` +
		`"nextAttemptNotBefore":null,"recoverNowRequested":false,"exhausted":false}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got = append(got, fmt.Sprintf("%s %s %s", r.Method, r.URL.Path, body))
		switch r.Method + " " + r.URL.Path {
		case "POST /v1/gpu/clusters/cl_2/recover":
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"error":{"code":"nothing_to_recover","message":"No machine of this cluster is down."}}`)
		case "POST /v1/gpu/clusters/cl_1/recover":
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprint(w, cluster)
		default:
			fmt.Fprint(w, cluster)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	c := New(srv.URL, "cdk_test")

	cl, err := c.SetRecovery(ctx, "cl_1", RecoveryPolicyOf("restart", 4, 10))
	if err != nil || cl.Recovery.Mode != "restart" || cl.Recovery.MaxAttempts != 4 {
		t.Fatalf("set: %v %+v", err, cl.Recovery)
	}
	var ae *Error
	if _, err := c.Recover(ctx, "cl_2"); !errors.As(err, &ae) || ae.Status != http.StatusConflict || ae.Code != "nothing_to_recover" {
		t.Fatalf("nothing to recover: %#v", err)
	}
	if cl, err := c.Recover(ctx, "cl_1"); err != nil || cl.ID != "cl_1" {
		t.Fatalf("recover: %v %+v", err, cl)
	}
	r, err := c.Recovery(ctx, "cl_1")
	if err != nil || r.EpisodeStartedAt == nil || len(r.Outcomes) != 1 || r.Outcomes[0].Outcome != "skipped" {
		t.Fatalf("recovery: %v %+v", err, r)
	}
	want := []string{
		`PUT /v1/gpu/clusters/cl_1/recovery {"mode":"restart","maxAttempts":4,"cooldownMinutes":10}`,
		`POST /v1/gpu/clusters/cl_2/recover `,
		`POST /v1/gpu/clusters/cl_1/recover `,
		`GET /v1/gpu/clusters/cl_1 `,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
