package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Balance and Usage against a scripted server: the paths and the month they
// send, how they read answers and a member's 403 (B1, B3).
func TestClientBilling(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.RequestURI())
		switch {
		case r.URL.Path == "/v1/billing/balance" && r.Header.Get("Authorization") == "Bearer cdk_member":
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"error":{"code":"forbidden","message":"Only owners and admins see the billing."}}`)
		case r.URL.Path == "/v1/billing/balance":
			fmt.Fprint(w, `{"balance":"100.00","burnRate":"4.00","hoursRemaining":25,"spendThisMonth":"12.50","month":"2026-12","testMode":true}`)
		case r.URL.Path == "/v1/billing/usage":
			fmt.Fprintf(w, `{"month":%q,"total":"3.00","clusters":[{"clusterId":"cl_1","name":"a","amount":"3.00","status":"completed","machines":[]}]}`, r.URL.Query().Get("month"))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	c := New(srv.URL, "cdk_owner")

	b, err := c.Balance(ctx)
	if err != nil || b.Balance != "100.00" || b.BurnRate != "4.00" || b.HoursRemaining == nil || *b.HoursRemaining != 25 || b.SpendThisMonth != "12.50" {
		t.Fatalf("balance: %v %+v", err, b)
	}
	u, err := c.Usage(ctx, "2026-11")
	if err != nil || u.Month != "2026-11" || u.Total != "3.00" || len(u.Clusters) != 1 || u.Clusters[0].ClusterID != "cl_1" {
		t.Fatalf("usage: %v %+v", err, u)
	}
	if _, err := c.Usage(ctx, ""); err != nil {
		t.Fatal(err)
	}
	_, err = New(srv.URL, "cdk_member").Balance(ctx)
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != http.StatusForbidden || ae.Code != "forbidden" {
		t.Fatalf("member: %#v", err)
	}
	want := []string{"GET /v1/billing/balance", "GET /v1/billing/usage?month=2026-11", "GET /v1/billing/usage", "GET /v1/billing/balance"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("requests:\n got %v\nwant %v", got, want)
	}
}
