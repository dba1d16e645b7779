package lambda_test

import (
	"context"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/lambda"
)

// Lambda reports a booting machine "unhealthy" for a while before "active"
// (SkyPilot reads it as still starting): the adapter describes it as
// pending, with Lambda's word in the message, so the provision job holds
// it to its step's deadline (L4) instead of failing the cluster at once;
// then it runs, with its addresses. The fake plays it (Unhealthy).
func TestUnhealthyDuringBootIsStarting(t *testing.T) {
	e := newEnv(t)
	e.fake.SetCapacity(h100, "us-west-1", 2)
	e.fake.Unhealthy = 2 * time.Minute
	ctx := context.Background()
	must(e.cloud.PlaceGroup(ctx, request("cl_u", "us-west-1", 2)))
	e.clk.Advance(e.fake.BootDelay + time.Minute)
	if st := e.fake.Live()[0].Status; st != lambda.StatusUnhealthy {
		t.Fatalf("the fake's machine is %s mid-boot, want unhealthy", st)
	}
	g := must(e.cloud.DescribeGroup(ctx, "cl_u"))
	for _, n := range g.Nodes {
		if n.State != providers.NodePending || n.Message == "" {
			t.Fatalf("an unhealthy booting machine reads %+v, want pending with Lambda's word", n)
		}
	}
	e.clk.Advance(time.Minute)
	g = must(e.cloud.DescribeGroup(ctx, "cl_u"))
	for _, n := range g.Nodes {
		if n.State != providers.NodeRunning || n.PublicHost == "" || n.PrivateIP == "" {
			t.Fatalf("after the unhealthy spell: %+v", n)
		}
	}
}
