package mcpserver

import (
	"context"
	"fmt"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func (t *tools) listVolumes(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "list_volumes", InputSchema: inputSchema[NoArgs](nil), Annotations: readOnly("List volumes"),
		Description: "The environment's persistent volumes: location, size, price per hour (billed until deleted, attached or not) and the cluster attached now."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ NoArgs) (*mcp.CallToolResult, any, error) {
			var l api.VolumeList
			return call(ctx, func(o client.Option) (err error) { l, err = t.api.Volumes(ctx, o); return err },
				func() string {
					return fmt.Sprintf("%d volumes; mount one with quote_cluster's volume_id (the cluster runs in its location).", len(l.Volumes))
				})
		})
}

// VolumeArgs are create_volume's arguments (V2).
type VolumeArgs struct {
	Name     string `json:"name" jsonschema:"lower-case letters, digits and dashes"`
	Location string `json:"location" jsonschema:"a location id from list_offers where datacenter offers are sold"`
	SizeGB   int    `json:"size_gb" jsonschema:"size in GB, 1 to 100000"`
}

func (t *tools) createVolume(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "create_volume", InputSchema: inputSchema[VolumeArgs](nil), Annotations: writes("Create a volume", false, false),
		Description: "Create a persistent volume in a location; it bills by the GB-hour from now until delete_volume, attached or not, and mounts at /shared/volume on every node of a cluster quoted with its volume_id."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in VolumeArgs) (*mcp.CallToolResult, any, error) {
			var v api.Volume
			return call(ctx, func(o client.Option) (err error) {
				v, err = t.api.CreateVolume(ctx, api.VolumeBody{Name: in.Name, Location: in.Location, SizeGB: in.SizeGB}, o)
				return err
			}, func() string {
				return fmt.Sprintf("Volume %s %q: %d GB in %s, billed $%s/h until deleted.", v.ID, v.Name, v.SizeGB, v.Location, v.USDPerHour)
			})
		})
}

// VolumeIDArgs name one volume.
type VolumeIDArgs struct {
	VolumeID string `json:"volume_id" jsonschema:"a volume id from list_volumes"`
}

func (t *tools) deleteVolume(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "delete_volume", InputSchema: inputSchema[VolumeIDArgs](nil), Annotations: writes("Delete a volume", true, false),
		Description: "Delete a volume and its data for good; its billing stops. Refused (volume_attached) while a cluster that has not ended holds it: terminate the cluster first."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in VolumeIDArgs) (*mcp.CallToolResult, any, error) {
			if err := t.api.DeleteVolume(ctx, in.VolumeID); err != nil {
				return failure(err)
			}
			return answer(fmt.Sprintf("Volume %s deleted; its billing stopped.", in.VolumeID), []byte(`{"deleted":true}`))
		})
}
