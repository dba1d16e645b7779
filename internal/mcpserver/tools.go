package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// OffersArgs are list_offers' arguments.
type OffersArgs struct {
	Accelerator      string `json:"accelerator,omitempty" jsonschema:"accelerator, e.g. H100_80GB; all when empty"`
	Nodes            int    `json:"nodes,omitempty" jsonschema:"machines in the cluster (2 to 64); prices are for all of them; default 2"`
	GPUsPerNode      int    `json:"gpus_per_node,omitempty" jsonschema:"GPUs per machine: 1, 2, 4 or 8"`
	Interconnect     string `json:"interconnect,omitempty" jsonschema:"ethernet, infiniband or roce"`
	MachineKind      string `json:"machine_kind,omitempty" jsonschema:"vm, bare_metal or container"`
	MaxPrice         string `json:"max_price,omitempty" jsonschema:"a ceiling in dollars per hour for the whole cluster, e.g. \"60\""`
	IncludeCommunity bool   `json:"include_community,omitempty" jsonschema:"also offer community hosts, run by independent operators (keep secrets off them)"`
	Sort             string `json:"sort,omitempty" jsonschema:"cluster_price (the default: cheapest whole cluster first), gpu_price (lowest price per GPU-hour first) or track_record (the offers whose recent launches at this size succeeded most often first)"`
}

func (t *tools) listOffers(s *mcp.Server) {
	schema := inputSchema[OffersArgs](map[string][]any{
		"gpus_per_node": {1, 2, 4, 8},
		"interconnect":  {"ethernet", "infiniband", "roce"}, "machine_kind": {"vm", "bare_metal", "container"},
		"sort": {"cluster_price", "gpu_price", "track_record"},
	})
	mcp.AddTool(s, &mcp.Tool{Name: "list_offers", InputSchema: schema, Annotations: readOnly("List offers"),
		Description: "List the offers that can start a cluster of this size now, by location, with the whole-cluster price per hour, each offer's track record at this size over the last 30 days (trackRecord: every launch by outcome, launches ready of those that ended, median minutes to ready, verification and machine failures, and the ring bus bandwidth its verifications measured, median and worst, in GB/s and as a share of the NICs' line rate), and the organisation's own private offers."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in OffersArgs) (*mcp.CallToolResult, any, error) {
			q := client.OffersQuery{Accelerator: in.Accelerator, Nodes: in.Nodes, GPUsPerNode: in.GPUsPerNode, Interconnect: in.Interconnect,
				MachineKind: in.MachineKind, MaxPrice: in.MaxPrice, IncludeCommunity: in.IncludeCommunity, Sort: in.Sort}
			var out api.OffersResponse
			return call(ctx, func(o client.Option) (err error) { out, err = t.api.Offers(ctx, q, o); return err },
				func() string { return offersSummary(out) })
		})
}

// offersSummary counts the offers and names each private offer (X9) with
// the quote_cluster arguments that launch it at its locked price.
func offersSummary(out api.OffersResponse) string {
	s := fmt.Sprintf("%d offers for %d machines. Quote one with quote_cluster (offer_id, or accelerator, nodes and gpus_per_node).", out.Count, out.Nodes)
	if best := bestTracked(out); best != nil {
		s += fmt.Sprintf("\nBest track record at this size (last 30 days): %s in %s, %s", best.ID, best.LocationName, best.TrackRecord.Summary)
		if rs := best.TrackRecord.RingSummary; rs != "" {
			s += ", " + rs // X13: what its fabric measured
		}
		s += "."
	}
	if len(out.PrivateOffers) == 0 {
		return s
	}
	s += fmt.Sprintf("\nYour organisation's private offers (%d, at a locked price, only for you):", len(out.PrivateOffers))
	for _, p := range out.PrivateOffers {
		s += fmt.Sprintf("\n- %s: %d × %d GPUs %s at %s (%s, %s), $%s/h for the whole cluster ($%s per machine), until %s; "+
			"quote it with quote_cluster private_offer_id=%s accelerator=%s nodes=%d gpus_per_node=%d.",
			p.ID, p.Nodes, p.GPUsPerNode, p.Accelerator, p.Location, p.Interconnect, p.MachineKind, p.USDPerHour, p.USDPerMachineHour,
			p.ValidUntil.UTC().Format("2006-01-02 15:04 MST"), p.ID, p.Accelerator, p.Nodes, p.GPUsPerNode)
	}
	return s
}

// bestTracked is the offer whose recent launches at this size succeeded
// most often (then most launches), or nil when none was launched.
func bestTracked(out api.OffersResponse) *api.Offer {
	var best *api.Offer
	for gi := range out.Groups {
		for oi := range out.Groups[gi].Offers {
			o := &out.Groups[gi].Offers[oi]
			r := o.TrackRecord
			if r.LaunchesTried == 0 || o.Availability != "available" {
				continue
			}
			if best == nil {
				best = o
				continue
			}
			b := best.TrackRecord
			if l, rr := r.LaunchesReady*b.LaunchesTried, b.LaunchesReady*r.LaunchesTried; l > rr || l == rr && r.LaunchesTried > b.LaunchesTried {
				best = o
			}
		}
	}
	return best
}

// QuoteArgs are quote_cluster's arguments: the priced fields (Q1).
type QuoteArgs struct {
	Accelerator      string `json:"accelerator" jsonschema:"accelerator, e.g. H100_80GB"`
	Nodes            int    `json:"nodes" jsonschema:"machines in the cluster (2 to 64)"`
	GPUsPerNode      int    `json:"gpus_per_node" jsonschema:"GPUs per machine: 1, 2, 4 or 8"`
	PersistentGB     int    `json:"persistent_gb,omitempty" jsonschema:"a persistent volume shared by every node, in GB; 0 for none"`
	MaxHourlyPrice   string `json:"max_hourly_price,omitempty" jsonschema:"refuse offers above this many dollars per hour for the whole cluster, e.g. \"100\""`
	Location         string `json:"location,omitempty" jsonschema:"a location id from list_offers; any when empty"`
	OfferID          string `json:"offer_id,omitempty" jsonschema:"an offer id from list_offers; the cheapest that fits when empty"`
	IncludeCommunity bool   `json:"include_community,omitempty" jsonschema:"also consider community hosts"`
	PrivateOfferID   string `json:"private_offer_id,omitempty" jsonschema:"one of the organisation's private offers from list_offers (privateOffers), at its locked price; send its own accelerator, nodes and gpus_per_node"`
	VolumeID         string `json:"volume_id,omitempty" jsonschema:"mount an existing volume from list_volumes (instead of persistent_gb); the cluster runs in its location"`
}

func (a QuoteArgs) body() api.QuoteBody {
	b := client.QuoteFor(a.Accelerator, a.Nodes, a.GPUsPerNode)
	if a.PersistentGB != 0 {
		b.Storage = &api.Storage{PersistentGB: &a.PersistentGB}
	}
	b.MaxHourlyPrice, b.Location, b.OfferID = nonEmpty(a.MaxHourlyPrice), nonEmpty(a.Location), nonEmpty(a.OfferID)
	b.PrivateOfferID, b.VolumeID = nonEmpty(a.PrivateOfferID), nonEmpty(a.VolumeID)
	if a.IncludeCommunity {
		b.IncludeCommunity = &a.IncludeCommunity
	}
	return b
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (t *tools) quoteCluster(s *mcp.Server) {
	schema := inputSchema[QuoteArgs](map[string][]any{"gpus_per_node": {1, 2, 4, 8}})
	mcp.AddTool(s, &mcp.Tool{Name: "quote_cluster", InputSchema: schema, Annotations: writes("Quote a cluster", false, false),
		Description: "Lock a whole-cluster price for a shape for a while; launch it with launch_cluster and the quote's id. Refused with no_capacity (reason, advice) when nothing fits."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in QuoteArgs) (*mcp.CallToolResult, any, error) {
			var q api.Quote
			return call(ctx, func(o client.Option) (err error) { q, err = t.api.Quote(ctx, in.body(), o); return err },
				func() string {
					private := ""
					if q.PrivateOfferID != "" {
						private = " (private offer " + q.PrivateOfferID + ")"
					}
					return fmt.Sprintf("Quote %s: %d × %d GPUs %s at %s%s, $%s/h for the whole cluster, until %s. Launch it with launch_cluster quote_id=%s.",
						q.ID, q.Nodes, q.GPUsPerNode, q.Accelerator, q.Location, private, q.USDPerHour, q.ExpiresAt.Format("15:04 MST"), q.ID)
				})
		})
}

// LaunchArgs are launch_cluster's arguments: a quote and the workload.
type LaunchArgs struct {
	QuoteID        string            `json:"quote_id" jsonschema:"the quote to launch (qt_…), from quote_cluster"`
	Name           string            `json:"name,omitempty" jsonschema:"the cluster's name: lowercase letters, digits and dashes; from the shape when empty"`
	Software       string            `json:"software,omitempty" jsonschema:"what runs across the machines: none (default), slurm, kubernetes or ray"`
	Env            map[string]string `json:"env,omitempty" jsonschema:"environment variables set on every node"`
	Ports          []int             `json:"ports,omitempty" jsonschema:"ports to open on every node"`
	SSHKeyIDs      []string          `json:"ssh_key_ids,omitempty" jsonschema:"ids of the key owner's SSH keys to install on every node"`
	Image          string            `json:"image,omitempty" jsonschema:"the image every node runs"`
	StartCommand   string            `json:"start_command,omitempty" jsonschema:"the command every node starts"`
	IdempotencyKey string            `json:"idempotency_key,omitempty" jsonschema:"makes retries safe: the same key and arguments give the same cluster; derived from the arguments when empty"`
	IdleHours      int               `json:"idle_hours,omitempty" jsonschema:"opt in to the idle rule: when every GPU has been below 5 % for this many hours (1 to 24), mail the owners; off when 0"`
	IdleAction     string            `json:"idle_action,omitempty" jsonschema:"with idle_hours: mail (default), or stop or terminate the cluster 60 minutes after the warning mail"`
	Verify         *bool             `json:"verify,omitempty" jsonschema:"verify every machine and the fabric before hand-over (default true); false hands it over unverified"`
}

// body is the launch's API body.
func (a LaunchArgs) body() api.LaunchBody {
	b := api.LaunchBody{QuoteID: a.QuoteID, Name: a.Name, Software: a.Software, Env: a.Env, Ports: a.Ports,
		SSHKeyIDs: a.SSHKeyIDs, Image: a.Image, StartCommand: a.StartCommand, Verify: a.Verify}
	if a.IdleHours != 0 || a.IdleAction != "" {
		on, hours := true, a.IdleHours
		idle := &api.IdleWatchBody{Enabled: &on, Hours: &hours}
		if a.IdleAction != "" {
			idle.Action = &a.IdleAction
		}
		b.GPUWatch = &api.GPUWatchBody{Idle: idle}
	}
	return b
}

// idempotencyKey is the agent's key, or one derived from the launch's body:
// a retried tool call (the same arguments) sends the same key and gets the
// cluster the first call launched, never a second one (L1). A quote
// launches once, so different arguments for the same quote are refused
// rather than launched again.
func (a LaunchArgs) idempotencyKey() string {
	if a.IdempotencyKey != "" {
		return a.IdempotencyKey
	}
	raw, _ := json.Marshal(a.body()) // map keys sorted: the same arguments, the same bytes
	sum := sha256.Sum256(raw)
	return "mcp-" + hex.EncodeToString(sum[:16])
}

func (t *tools) launchCluster(s *mcp.Server) {
	schema := inputSchema[LaunchArgs](map[string][]any{"software": {"none", "slurm", "kubernetes", "ray"}})
	schema.Properties["quote_id"].MinLength = new(1)
	// Idempotent: the same arguments give the same cluster (idempotencyKey).
	mcp.AddTool(s, &mcp.Tool{Name: "launch_cluster", InputSchema: schema, Annotations: writes("Launch a cluster", false, true),
		Description: "Launch the cluster of a quote: every machine is reserved at once; follow it with get_cluster until ready. Safe to retry: the same arguments never launch twice."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in LaunchArgs) (*mcp.CallToolResult, any, error) {
			var cl api.Cluster
			var created bool
			key := in.idempotencyKey()
			return call(ctx, func(o client.Option) (err error) { cl, created, err = t.api.Launch(ctx, in.body(), key, o); return err },
				func() string {
					how := "Launched"
					if !created {
						how = "Already launched with this idempotency key (nothing new started):"
					}
					return fmt.Sprintf("%s %s %q, %d × %d GPUs %s at %s, $%s/h once ready, status %s (idempotency key %s). Call wait_for_cluster: it returns once the cluster is ready (or cannot get there).",
						how, cl.ID, cl.Name, cl.NodeCount, cl.GPUsPerNode, cl.Accelerator, cl.Location, cl.USDPerHour, cl.Status, key)
				})
		})
}

// NoArgs is the arguments of a tool that takes none.
type NoArgs struct{}

func (t *tools) listClusters(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "list_clusters", InputSchema: inputSchema[NoArgs](nil), Annotations: readOnly("List clusters"),
		Description: "List the clusters of the API key's organisation and environment, newest first, with their status and nodes."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ NoArgs) (*mcp.CallToolResult, any, error) {
			var list []api.Cluster
			return call(ctx, func(o client.Option) (err error) { list, err = t.api.Clusters(ctx, o); return err },
				func() string { return fmt.Sprintf("%d clusters.", len(list)) })
		})
}

// ClusterArgs name one cluster.
type ClusterArgs struct {
	ClusterID string `json:"cluster_id" jsonschema:"the cluster's id (cl_…)"`
}

func clusterSchema[T any]() *jsonschemaSchema {
	s := inputSchema[T](nil)
	s.Properties["cluster_id"].MinLength = new(1)
	return s
}

func (t *tools) getCluster(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "get_cluster", InputSchema: clusterSchema[ClusterArgs](), Annotations: readOnly("Get a cluster"),
		Description: "Get a cluster: status (provisioning, installing, ready, degraded, failed, terminated), each node's step, lastError and events."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ClusterArgs) (*mcp.CallToolResult, any, error) {
			var cl api.Cluster
			return call(ctx, func(o client.Option) (err error) { cl, err = t.api.Cluster(ctx, in.ClusterID, o); return err },
				func() string { return clusterSummary(cl) })
		})
}

// clusterSummary says where a cluster stands and what to do next.
func clusterSummary(cl api.Cluster) string {
	s := fmt.Sprintf("Cluster %s %q is %s.", cl.ID, cl.Name, cl.Status)
	if cl.LastError != nil && *cl.LastError != "" {
		s += " Last error: " + *cl.LastError + "."
	}
	switch cl.Status {
	case "provisioning", "installing", "verifying":
		s += " Not ready yet: wait_for_cluster blocks until it is (or call get_cluster again in a minute)."
	case "ready":
		s += " Billing since readyAt; cluster_connections shows how to reach it. Ready is infrastructure readiness: check your own application."
	case "degraded":
		s += " Billing continues: recover_cluster tries once now (set_recovery restarts automatically), or terminate_cluster it."
	case "failed":
		s += " Nothing was billed; quote and launch again."
	}
	return s
}

func (t *tools) clusterConnections(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "cluster_connections", InputSchema: clusterSchema[ClusterArgs](), Annotations: readOnly("Cluster connections"),
		Description: "How to reach a cluster whose machines are up: each node's SSH command and private address, the env block and ready-made launch commands."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ClusterArgs) (*mcp.CallToolResult, any, error) {
			var c api.Connections
			return call(ctx, func(o client.Option) (err error) { c, err = t.api.Connections(ctx, in.ClusterID, o); return err },
				func() string {
					s := fmt.Sprintf("Cluster %s (%s): %d nodes.", c.Cluster, c.Status, len(c.Nodes))
					if c.Primary != nil {
						s += " Primary: " + c.Primary.SSH
					}
					return s
				})
		})
}

// LogsArgs pick a node's last lines.
type LogsArgs struct {
	ClusterID string `json:"cluster_id" jsonschema:"the cluster's id (cl_…)"`
	Node      int    `json:"node,omitempty" jsonschema:"the node's rank; 0 (the primary) by default"`
	Lines     int    `json:"lines,omitempty" jsonschema:"how many of the last lines, 1 to 1000; 100 by default"`
}

func (t *tools) clusterLogs(s *mcp.Server) {
	schema := clusterSchema[LogsArgs]()
	schema.Properties["node"].Minimum, schema.Properties["node"].Maximum = new(0.0), new(63.0)
	schema.Properties["lines"].Minimum, schema.Properties["lines"].Maximum = new(1.0), new(1000.0)
	mcp.AddTool(s, &mcp.Tool{Name: "cluster_logs", InputSchema: schema, Annotations: readOnly("Cluster logs"),
		Description: "The last lines of one node's log (rank 0 by default)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in LogsArgs) (*mcp.CallToolResult, any, error) {
			logs, err := t.api.Logs(ctx, in.ClusterID, in.Node)
			if err != nil {
				return failure(err)
			}
			n := in.Lines
			if n == 0 {
				n = 100
			}
			if len(logs.Lines) > n {
				logs.Lines = logs.Lines[len(logs.Lines)-n:]
			}
			raw, err := json.Marshal(logs)
			if err != nil {
				return nil, nil, err
			}
			return answer(fmt.Sprintf("The last %d lines of %s on cluster %s.", len(logs.Lines), logs.Node, logs.Cluster), raw)
		})
}

func (t *tools) terminateCluster(s *mcp.Server) {
	// Destructive (every machine and its disk go); idempotent (terminating a
	// terminated cluster changes nothing).
	mcp.AddTool(s, &mcp.Tool{Name: "terminate_cluster", InputSchema: clusterSchema[ClusterArgs](), Annotations: writes("Terminate a cluster", true, true),
		Description: "Terminate a cluster: every machine is released together and billing ends; only a persistent volume is kept. Accepted in every state."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ClusterArgs) (*mcp.CallToolResult, any, error) {
			var cl api.Cluster
			return call(ctx, func(o client.Option) (err error) { cl, err = t.api.Terminate(ctx, in.ClusterID, o); return err },
				func() string {
					return fmt.Sprintf("Terminating cluster %s %q (status %s): every machine is being released.", cl.ID, cl.Name, cl.Status)
				})
		})
}

// QuoteRequestArgs are request_quote's arguments (RQ1).
type QuoteRequestArgs struct {
	Accelerator   string `json:"accelerator" jsonschema:"accelerator, e.g. H100_80GB"`
	Nodes         int    `json:"nodes" jsonschema:"machines wanted (2 to 512)"`
	GPUsPerNode   int    `json:"gpus_per_node" jsonschema:"GPUs per machine (1 to 8)"`
	Fabric        string `json:"fabric,omitempty" jsonschema:"any (default), ethernet, infiniband or roce"`
	Location      string `json:"location,omitempty" jsonschema:"a preferred location; anywhere when empty"`
	StartDate     string `json:"start_date" jsonschema:"the first day, YYYY-MM-DD (today or later)"`
	DurationDays  int    `json:"duration_days" jsonschema:"how many days (1 to 1095)"`
	BudgetPerHour string `json:"budget_per_hour,omitempty" jsonschema:"the most the whole cluster may cost per hour, in dollars"`
	Notes         string `json:"notes,omitempty" jsonschema:"anything the team should know"`
}

func (t *tools) requestQuote(s *mcp.Server) {
	schema := inputSchema[QuoteRequestArgs](map[string][]any{"fabric": {"any", "ethernet", "infiniband", "roce"}})
	mcp.AddTool(s, &mcp.Tool{Name: "request_quote", InputSchema: schema, Annotations: writes("Request a quote", false, false),
		Description: "Ask Clusterdeck's team for reserved capacity, more machines than self-serve or a fast fabric; they answer the API key's creator."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in QuoteRequestArgs) (*mcp.CallToolResult, any, error) {
			body := api.QuoteRequestBody{Accelerator: in.Accelerator, Nodes: in.Nodes, GPUsPerNode: in.GPUsPerNode, Fabric: in.Fabric,
				Location: in.Location, StartDate: in.StartDate, DurationDays: in.DurationDays, BudgetPerHour: in.BudgetPerHour, Notes: in.Notes}
			if body.Fabric == "" {
				body.Fabric = "any"
			}
			var r api.QuoteRequest
			return call(ctx, func(o client.Option) (err error) { r, err = t.api.RequestQuote(ctx, body, o); return err },
				func() string {
					return fmt.Sprintf("Quote request %s is %s; the team answers %s.", r.ID, r.Status, r.Contact.Email)
				})
		})
}
