// Package apiclient is the Go client oapi-codegen generates, unmodified,
// from the OpenAPI document (static/openapi.json) the server publishes. It
// is not what the CLI uses (that is package client): it exists to prove the
// document works with a stock generator, and its test calls a real server
// through it (API1).
package apiclient

//go:generate go tool oapi-codegen -config config.yaml ../../static/openapi.json
