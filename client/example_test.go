package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
)

// Quote a shape, launch it with an idempotency key, and read its status.
func Example() {
	ctx := context.Background()
	c := client.New("http://127.0.0.1:8080", os.Getenv("CLUSTERDECK_API_KEY"))
	q, err := c.Quote(ctx, client.QuoteFor("H100_80GB", 2, 8))
	var refused *client.Error
	if errors.As(err, &refused) && refused.Refused() {
		var shape api.Shape
		refused.Extra("shape", &shape)
		fmt.Println(refused.Code, refused.Message, shape.Accelerator)
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	key := client.NewIdempotencyKey() // keep it to retry safely (L1)
	cl, created, err := c.Launch(ctx, api.LaunchBody{QuoteID: q.ID, Software: "slurm"}, key)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cl.ID, cl.Status, created)
}
