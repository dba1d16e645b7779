// Package runpod adapts RunPod's REST API v2 (pods and Instant Clusters)
// to providers.Provider (OP1).
//
// RunPod sells a GPU type × GPU count per pod in a data center, with a
// NONE/LOW/MEDIUM/HIGH stock level rather than a count. A group of N
// machines is placed with one call when the shape fits an Instant Cluster
// (POST /v2/clusters): N is a cluster size (ClusterMinPods–ClusterMaxPods), the placement
// carries the cluster's bootstrap token, and the catalog's product=CLUSTER
// stock of the GPU type in the data center is not NONE at a price within
// the placement's ceiling. Every member pod
// runs the same start-up script; each agent claims its rank with its pod
// id (RunPod sets RUNPOD_POD_ID in every pod), which is the machine id the
// placement returns, and the cluster's private overlay address (cluster.ip)
// is the node's private address. Such a group is deleted as a whole
// (DELETE /v2/clusters/{id}); its pods cannot be stopped or released one
// by one (ErrUnsupported), only restarted.
//
// Otherwise the group is N pods created one by one in one data center, each
// named "<group>-<index>" and carrying the group and its rank in its
// environment; when any create fails, every pod of the group is deleted
// before the error is returned (all or nothing at our level). Either way a
// retried placement adopts the pods it finds.
package runpod

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/bootstrap"
	"github.com/clusterdeck/clusterdeck/providers/cloudkit"
)

// Name is the provider's stable identifier.
const Name = "runpod"

// DefaultBaseURL is RunPod's REST v2 server.
const DefaultBaseURL = "https://api.runpod.io"

// DefaultImage is the container image of pods whose placement names none:
// the spec's example PyTorch image (Ubuntu 24.04, CUDA 12.8).
const DefaultImage = "runpod/pytorch:1.0.2-cu1281-torch280-ubuntu2404"

// Environment variables every pod we create carries: its group and rank.
const (
	EnvGroup = "CLUSTERDECK_GROUP"
	EnvIndex = "CLUSTERDECK_INDEX"
)

// BootTime is the typical time from create to a reachable pod (image pull included).
const BootTime = 8 * time.Minute

// SSHUser is the login of a pod's direct SSH endpoint.
const SSHUser = "root"

// GPUCounts are the pod sizes offered, each up to the GPU type's maxCount.
var GPUCounts = []int{1, 2, 4, 8}

// ClusterMinPods and ClusterMaxPods bound the pod count of one Instant
// Cluster: the description's ClusterCompute.podCount has minimum 2 and
// maximum 250 (every cluster the product launches, 2–64 machines, fits).
const ClusterMinPods, ClusterMaxPods = 2, 250

// deadlineRoom is what a placement leaves of its caller's time: it stops
// waiting this long before the caller's deadline, so that its answer (and
// the requests it still makes) arrive in time.
const deadlineRoom = 5 * time.Second

// EnvPodID is the variable in which RunPod hands every pod its own id.
const EnvPodID = "RUNPOD_POD_ID"

// EnvPublicKey is the variable startSsh installs the pod's SSH keys from
// (RunPod's images start sshd with it); set in the create, it replaces
// the account's registered keys.
const EnvPublicKey = "PUBLIC_KEY"

// Config configures the adapter. APIKey and Agent.URL are required.
type Config struct {
	APIKey      string   // RUNPOD_API_KEY; sent as a Bearer token, never logged
	BaseURL     string   // default DefaultBaseURL
	DataCenters []string // RUNPOD_DATACENTERS: data center ids sold; empty = every one listed
	Image       string   // default image when a placement names none (default DefaultImage)
	DiskGB      int      // container disk per pod (default 50)
	Agent       bootstrap.AgentInstall
	// OperatorKey is the operator's SSH public key (RUNPOD_SSH_KEY): put
	// in every pod's PUBLIC_KEY beside its own cluster's keys, and the one
	// key left registered on the account (the registered set is replaced
	// by it once, removing the customers' keys an earlier version added).
	// Empty: the registered set is left as it is and never added to.
	OperatorKey string

	HTTPClient *http.Client
	Now        func() time.Time
	Sleep      func(context.Context, time.Duration) error
	Retries    int           // transient retries per request (default 4; negative = none)
	Backoff    time.Duration // first retry delay (default 2 s)
	// Reserve is how many requests of a rate-limit window are kept for
	// terminates and releases (default 6: two terminates' reads and
	// deletes): once a window has no more left, placements and describes
	// wait for it to reset (negative = none).
	Reserve int
	// MemberWait bounds how long one placement call waits for an Instant
	// Cluster's members to be given their ranks and overlay addresses
	// (default 30 s). Past it the placement answers ErrTransient and keeps
	// the cluster: the next call adopts it and waits again, until the
	// cluster's own deadline fails it (L4).
	MemberWait time.Duration
}

// String never shows the key.
func (c Config) String() string {
	return fmt.Sprintf("runpod.Config{BaseURL: %q, DataCenters: %v, APIKey: [redacted]}", c.BaseURL, c.DataCenters)
}

// Cloud is the RunPod adapter. It is safe for concurrent use.
type Cloud struct {
	cfg     Config
	c       *cloudkit.Client
	allowed map[string]bool // nil = all
	locks   cloudkit.Locks
	// keys serialises the one-time reset of the account's registered SSH
	// keys to the operator's; keysSet says it was done.
	keys    sync.Mutex
	keysSet bool
}

var _ providers.Provider = (*Cloud)(nil)

// fleet is how RunPod's pods read: the group in their environment, the
// rank there or, for an Instant Cluster's member, the one RunPod assigns.
var fleet = cloudkit.Fleet[Pod]{Provider: Name, Group: func(p Pod) string { return p.Env[EnvGroup] },
	Rank: index, Alive: alive, Node: node, Location: func(p Pod) string {
		if p.DataCenterID == nil {
			return ""
		}
		return *p.DataCenterID
	}}

// New returns the adapter for cfg.
func New(cfg Config) (*Cloud, error) {
	if strings.TrimSpace(cfg.APIKey) == "" {
		return nil, errors.New("runpod: an API key is required")
	}
	if err := cfg.Agent.Validate(); err != nil {
		return nil, fmt.Errorf("runpod: %w", err)
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.Image == "" {
		cfg.Image = DefaultImage
	}
	if cfg.DiskGB <= 0 {
		cfg.DiskGB = 50
	}
	if cfg.MemberWait <= 0 {
		cfg.MemberWait = 30 * time.Second
	}
	switch {
	case cfg.Reserve == 0:
		cfg.Reserve = 6
	case cfg.Reserve < 0:
		cfg.Reserve = 0
	}
	return &Cloud{cfg: cfg, c: newClient(cfg), allowed: cloudkit.Set(cfg.DataCenters)}, nil
}

// Name is "runpod".
func (r *Cloud) Name() string { return Name }

// OfferID is "<data center>/<GPU count>x/<GPU type id>" (GPU type ids hold
// spaces but no slash: "NVIDIA GeForce RTX 4090").
func OfferID(dc string, count int, gpu string) string {
	return dc + "/" + strconv.Itoa(count) + "x/" + gpu
}

func parseOfferID(id string) (dc string, count int, gpu string, ok bool) {
	parts := strings.SplitN(id, "/", 3)
	if len(parts) != 3 || parts[0] == "" || parts[2] == "" || !strings.HasSuffix(parts[1], "x") {
		return "", 0, "", false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(parts[1], "x"))
	return parts[0], n, parts[2], err == nil && n > 0
}

// catalog is the secure cloud's GPU types with their stock for pods of count GPUs.
func (r *Cloud) catalog(ctx context.Context, op string, count int) ([]GpuType, error) {
	return r.catalogOf(ctx, op, "POD", count)
}

// catalogOf is the catalog with the stock of product (POD or CLUSTER).
func (r *Cloud) catalogOf(ctx context.Context, op, product string, count int) ([]GpuType, error) {
	q := url.Values{"include": {"AVAILABILITY"}, "product": {product}, "count": {strconv.Itoa(count)}, "cloud": {"SECURE"}}
	var out struct {
		GPUs []GpuType `json:"gpus"`
	}
	if err := r.c.Do(ctx, op, http.MethodGet, pathGPUs+"?"+q.Encode(), nil, &out); err != nil {
		return nil, err
	}
	return out.GPUs, nil
}

// ListOffers returns one offer per GPU type, pod size and allowed data
// center. RunPod's stock is a level (NONE, LOW, MEDIUM, HIGH), not a count,
// so NodesAvailable is nil and Available is "not NONE" (O1); the stock is
// asked per pod size, as it differs by size. Prices are the secure cloud's
// per GPU-hour, the same in every data center.
func (r *Cloud) ListOffers(ctx context.Context) ([]providers.Offer, error) {
	var offers []providers.Offer
	for _, n := range GPUCounts {
		gpus, err := r.catalog(ctx, opListOffers, n)
		if err != nil {
			return nil, err
		}
		for _, g := range gpus {
			if !g.Secure || g.MaxCount.Secure < n || g.Price.Secure <= 0 {
				continue
			}
			for _, dc := range g.DataCenters {
				if r.allowed != nil && !r.allowed[dc.ID] {
					continue
				}
				offers = append(offers, r.offer(g, n, dc))
			}
		}
	}
	sort.Slice(offers, func(a, b int) bool { return offers[a].OfferID < offers[b].OfferID })
	return offers, nil
}

func (r *Cloud) offer(g GpuType, n int, dc DataCenterAvailability) providers.Offer {
	name := dc.Name
	if name == "" {
		name = dc.ID
	}
	return providers.Offer{Provider: Name, OfferID: OfferID(dc.ID, n, g.ID), Location: dc.ID, LocationName: name,
		Interconnect: providers.Ethernet, MachineKind: providers.Container, Accelerator: accelerator(g),
		GPUsPerNode: n, PerGPUHourUSD: microUSD(g.Price.Secure), RootDiskGB: r.cfg.DiskGB,
		Available: dc.Availability != "" && dc.Availability != AvailNone, BootTime: BootTime, PublicIPs: true}
}

// microUSD turns dollars into micro-dollars, rounded up so nothing is sold below its price.
func microUSD(usd float64) int64 { return int64(math.Ceil(usd*1e6 - 1e-6)) }

// accelerator turns {name "RTX 4090", memory 24} into "RTX_4090" and
// {name "H100 SXM", memory 80} into "H100_80GB": the form factor is
// dropped, as the other providers' names have none (Lambda's
// "H100 (80 GB SXM5)" is H100_80GB too), so offers compare across providers.
func accelerator(g GpuType) string {
	name := strings.TrimSpace(g.Name)
	if name == "" {
		name = strings.TrimPrefix(g.ID, "NVIDIA ")
	}
	words := strings.Fields(name)
	for len(words) > 1 && formFactors[strings.ToUpper(words[len(words)-1])] {
		words = words[:len(words)-1]
	}
	return providers.AcceleratorName(strings.Join(words, " "), g.Memory)
}

var formFactors = map[string]bool{"SXM": true, "SXM4": true, "SXM5": true, "PCIE": true, "NVL": true}

// PlaceGroup places req.Count pods of the offer in its data center: one
// Instant Cluster when the shape fits one (see the package comment), else
// one create per pod. Pods already carrying the group are adopted. When
// any create fails, every pod of the group is deleted and the error
// returned.
func (r *Cloud) PlaceGroup(ctx context.Context, req providers.PlaceRequest) (providers.Group, error) {
	dc, n, gpu, err := r.validate(req)
	if err != nil {
		return providers.Group{}, err
	}
	defer r.locks.Lock(req.GroupName)()
	if clusterShape(req) {
		// Its own Instant Cluster, by name, before anything else: a cluster
		// an earlier call created may list no member yet (the description
		// allows it), and read pod by pod it would look like nothing placed
		// (a catalog of NONE refused as no capacity and the cluster rolled
		// back, or pods created beside it).
		cls, err := r.clustersOfTick(ctx)
		if err != nil {
			return providers.Group{}, err
		}
		if k := slices.IndexFunc(cls, func(c Cluster) bool { return c.Name == req.GroupName }); k >= 0 {
			return r.placeCluster(ctx, req, dc, n, gpu, cls[k])
		}
	}
	by, err := r.podsOfTick(ctx, opPlace)
	if err != nil {
		return providers.Group{}, err
	}
	for _, p := range by[req.GroupName] {
		if p.Cluster != nil && alive(p) {
			// A member of an Instant Cluster the clusters' list did not
			// show: adopt that cluster (its members may not have their
			// ranks yet, so they are not counted pod by pod).
			return r.placeCluster(ctx, req, dc, n, gpu, Cluster{ID: p.Cluster.ID})
		}
	}
	have, err := fleet.Adopt(by[req.GroupName], req.Count,
		func(p Pod) bool {
			return p.GPU != nil && p.GPU.ID == gpu && p.GPU.Count == n && (p.DataCenterID == nil || *p.DataCenterID == dc)
		},
		func(p Pod, i int) error {
			return cloudkit.Conflict(Name, opPlace, dc, fmt.Sprintf(
				"group %s already has pod %s (rank %d) that is not part of %d × %s", req.GroupName, p.ID, i, req.Count, req.OfferID))
		})
	if err != nil {
		return providers.Group{}, err
	}
	if len(have) == 0 {
		fits, err := r.clusterFits(ctx, req, dc, n, gpu)
		if err != nil {
			return providers.Group{}, err
		}
		if fits {
			return r.placeCluster(ctx, req, dc, n, gpu, Cluster{})
		}
	}
	if len(have) < req.Count {
		err := r.createMissing(ctx, req, dc, n, gpu, have)
		switch {
		case err != nil && cloudkit.Undecided(err):
			// The caller's deadline, or an answer still to come: the pods
			// made so far carry the group and the next call adopts them.
			return providers.Group{}, cloudkit.Pending(Name, opPlace, dc,
				fmt.Sprintf("%d of %d pods created; the next placement creates the rest", len(have), req.Count), err)
		case err != nil:
			return providers.Group{}, cloudkit.RolledBack(ctx, Name, req.GroupName, err, r.terminate)
		}
	}
	return fleet.Placed(req.GroupName, dc, have, req.Count), nil
}

// validate checks what RunPod would refuse, before anything is created:
// a pod's name has at most 191 characters.
func (r *Cloud) validate(req providers.PlaceRequest) (string, int, string, error) {
	dc, n, gpu, ok := parseOfferID(req.OfferID)
	o := cloudkit.Offer{Parsed: ok, Form: "<data center>/<count>x/<GPU type>", Sold: dc, MaxName: 191}
	if r.allowed != nil && !r.allowed[dc] {
		o.Disabled = "data center " + dc + " is not enabled (RUNPOD_DATACENTERS)"
	}
	return dc, n, gpu, cloudkit.Check(Name, opPlace, "RunPod", req, o)
}

// createMissing creates every rank not in have, adding what it created.
func (r *Cloud) createMissing(ctx context.Context, req providers.PlaceRequest, dc string, n int, gpu string, have map[int]Pod) error {
	// The catalog is "a way to order candidates, not a reservation", but it
	// is cheap: refuse without creating when the data center has none.
	gpus, err := r.catalog(ctx, opPlace, n)
	if err != nil {
		return err
	}
	k := slices.IndexFunc(gpus, func(g GpuType) bool { return g.ID == gpu })
	if k < 0 || gpus[k].MaxCount.Secure < n {
		return &providers.Error{Class: providers.ErrValidation, Provider: Name, Op: opPlace, Location: dc,
			Message: fmt.Sprintf("%d × %s is not sold", n, gpu)}
	}
	if price := int64(n) * microUSD(gpus[k].Price.Secure); req.AboveCeiling(price) {
		return providers.AboveCeiling(Name, opPlace, dc, fmt.Sprintf("a pod of %d × %s", n, gpu), price, req.MaxMachineHourUSD)
	}
	j := slices.IndexFunc(gpus[k].DataCenters, func(d DataCenterAvailability) bool { return d.ID == dc })
	if j < 0 || gpus[k].DataCenters[j].Availability == AvailNone {
		return &providers.Error{Class: providers.ErrNoCapacity, Provider: Name, Op: opPlace, Location: dc,
			Message: fmt.Sprintf("no %d × %s stock in %s", n, gpu, dc)}
	}
	if err := r.operatorKeyOnly(ctx); err != nil {
		return err
	}
	image, ports := r.container(req)
	for i := 0; i < req.Count; i++ {
		if _, ok := have[i]; ok {
			continue
		}
		w := req.Workload()
		w.Image = image
		script, err := bootstrap.Script(r.cfg.Agent, bootstrap.Foreground, req.Agent.ServerURL, req.Agent.Tokens[i], w)
		if err != nil {
			return &providers.Error{Class: providers.ErrValidation, Provider: Name, Op: opPlace, Location: dc, Message: err.Error()}
		}
		cr := CreatePodRequest{Name: cloudkit.MemberName(req.GroupName, i), Image: image, Args: ContainerArgs(script), Disk: r.cfg.DiskGB,
			Ports: ports, Env: map[string]string{EnvGroup: req.GroupName, EnvIndex: strconv.Itoa(i), EnvPublicKey: r.publicKey(req)}, Cloud: "SECURE",
			DataCenterIDs: []string{dc}, GPU: &GPUConfig{ID: gpu, Count: n}, StartSSH: true}
		p, err := r.create(ctx, req.GroupName, i, cr)
		if err != nil {
			return cloudkit.AtLocation(err, dc)
		}
		have[i] = p
		if p.DataCenterID != nil && *p.DataCenterID != "" && *p.DataCenterID != dc {
			return &providers.Error{Class: providers.ErrNoCapacity, Provider: Name, Op: opPlace, Location: dc,
				Message: fmt.Sprintf("pod %s was placed in %s, not %s", p.ID, *p.DataCenterID, dc)}
		}
	}
	return nil
}

// clusterFits reports whether the group is placed as one Instant Cluster:
// a cluster size, a bootstrap token for the one script, the catalog's
// cluster stock of the GPU type in the data center, and its price within
// the placement's ceiling (else the pods, priced as the offer was, are
// tried).
func (r *Cloud) clusterFits(ctx context.Context, req providers.PlaceRequest, dc string, n int, gpu string) (bool, error) {
	if !clusterShape(req) {
		return false, nil
	}
	gpus, err := r.catalogOf(ctx, opPlace, "CLUSTER", n)
	if err != nil {
		return false, err
	}
	k := slices.IndexFunc(gpus, func(g GpuType) bool { return g.ID == gpu })
	if k < 0 || gpus[k].MaxCount.Secure < n || gpus[k].Price.Secure <= 0 || req.AboveCeiling(int64(n)*microUSD(gpus[k].Price.Secure)) {
		return false, nil
	}
	j := slices.IndexFunc(gpus[k].DataCenters, func(d DataCenterAvailability) bool { return d.ID == dc })
	return j >= 0 && gpus[k].DataCenters[j].Availability != "" && gpus[k].DataCenters[j].Availability != AvailNone, nil
}

// clusterShape: a group of this size with a bootstrap token may be one
// Instant Cluster.
func clusterShape(req providers.PlaceRequest) bool {
	return req.Count >= ClusterMinPods && req.Count <= ClusterMaxPods && req.Agent.Token != ""
}

// placeCluster places the group with one POST /v2/clusters in the data
// center, or adopts cl, the cluster of that name an earlier call created:
// every member pod runs the same start-up script, with the cluster's
// bootstrap token, and its agent claims its rank with the pod's id. The
// members are read from GET /v2/clusters/{id}/pods and awaited until each
// has its rank and overlay address (see members). A cluster once created
// is never rolled back here: a wait that runs out, the caller's deadline
// or a failed read answer ErrTransient and keep it, and the next call
// adopts it; only the cluster's own deadline (L4) or a terminate (L7)
// deletes it.
func (r *Cloud) placeCluster(ctx context.Context, req providers.PlaceRequest, dc string, n int, gpu string, cl Cluster) (providers.Group, error) {
	adopted := cl.ID != ""
	if !adopted {
		var err error
		cl, err = r.createGroupCluster(ctx, req, dc, n, gpu)
		switch {
		case err != nil && cloudkit.Undecided(err):
			// The create may have been carried out: the next call finds
			// the cluster by name.
			return providers.Group{}, cloudkit.Pending(Name, opPlace, dc,
				"the cluster's create has no answer yet; the next placement looks for it by name", err)
		case err != nil:
			return providers.Group{}, r.withRollback(ctx, req.GroupName, dc, err)
		}
	}
	if cl.DataCenterID != nil && *cl.DataCenterID != "" && *cl.DataCenterID != dc {
		return providers.Group{}, r.withRollback(ctx, req.GroupName, dc, &providers.Error{Class: providers.ErrNoCapacity, Provider: Name,
			Op: opPlace, Location: dc, Message: fmt.Sprintf("cluster %s was placed in %s, not %s", cl.ID, *cl.DataCenterID, dc)})
	}
	byRank, err := r.members(ctx, req.GroupName, cl.ID, req.Count, adopted)
	var pending *membersPending
	switch {
	case errors.As(err, &pending):
		// A state the description allows: nothing is rolled back.
		return providers.Group{}, cloudkit.Pending(Name, opPlace, dc, pending.Error(), nil)
	case err != nil:
		// The caller's deadline or a failed read: the cluster is kept.
		return providers.Group{}, cloudkit.Pending(Name, opPlace, dc,
			fmt.Sprintf("cluster %s is placed; its members could not be read", cl.ID), err)
	}
	g := providers.Group{Provider: Name, Name: req.GroupName, Location: dc}
	for i := 0; i < req.Count; i++ {
		g.Nodes = append(g.Nodes, node(byRank[i], i))
	}
	return g, nil
}

// createGroupCluster sends the one POST /v2/clusters for the group.
func (r *Cloud) createGroupCluster(ctx context.Context, req providers.PlaceRequest, dc string, n int, gpu string) (Cluster, error) {
	if err := r.operatorKeyOnly(ctx); err != nil {
		return Cluster{}, err
	}
	image, ports := r.container(req)
	w := req.Workload()
	w.Image = image
	script, err := bootstrap.GroupScript(r.cfg.Agent, bootstrap.Foreground, req.Agent.ServerURL, req.Agent.Token, EnvPodID, w)
	if err != nil {
		return Cluster{}, &providers.Error{Class: providers.ErrValidation, Provider: Name, Op: opPlace, Location: dc, Message: err.Error()}
	}
	return r.createCluster(ctx, CreateClusterRequest{Name: req.GroupName, Type: "APPLICATION",
		Compute:       ClusterCompute{GPUTypeID: gpu, GPUCountPerPod: n, PodCount: req.Count},
		DataCenterIDs: []string{dc}, StartSSH: true, Image: image, Args: ContainerArgs(script), Disk: r.cfg.DiskGB,
		Ports: ports, Env: map[string]string{EnvGroup: req.GroupName, EnvPublicKey: r.publicKey(req)}})
}

// withRollback deletes whatever the group holds after a placement failed
// and returns the failure (with the data center where it has none).
func (r *Cloud) withRollback(ctx context.Context, group, dc string, err error) error {
	return cloudkit.RolledBack(ctx, Name, group, cloudkit.AtLocation(err, dc), r.terminate)
}

// membersPending is a cluster whose members are not all ranked and
// addressed yet when the placement's wait ran out.
type membersPending struct {
	cluster string
	missing string
}

func (e *membersPending) Error() string {
	return fmt.Sprintf("cluster %s is still provisioning: %s (RunPod assigns ranks and overlay addresses during provisioning)", e.cluster, e.missing)
}

// members reads the cluster's member pods until every rank 0..count-1 is
// assigned, each to one pod with its overlay address, waiting with
// backoff for at most MemberWait (on the adapter's clock), and never past
// the caller's deadline less deadlineRoom: the wait ends as "members
// pending" while the caller still has time to hear it. A member listed
// without a rank or an address, or not listed yet, is a state the
// description allows ("null until the index is assigned during
// provisioning", "omitted until the address is assigned"), never read as
// rank 0 or as no address.
//
// Within a job tick (a providers.Memo in ctx) nothing is waited for: the
// tick comes back within seconds, and its clusters share one listing
// (R1): an adopted cluster's members are read from the tick's listing of
// the account's pods, a cluster just created is read once.
func (r *Cloud) members(ctx context.Context, group, clusterID string, count int, adopted bool) (map[int]Pod, error) {
	wait, waited, patience := r.c.Backoff, time.Duration(0), r.cfg.MemberWait
	if left, ok := cloudkit.TimeLeft(ctx, r.c.Now(), deadlineRoom); ok {
		patience = max(0, min(patience, left))
	}
	if providers.HasMemo(ctx) {
		patience = 0
	}
	for first := true; ; first = false {
		var out struct {
			Pods []Pod `json:"pods"`
		}
		if first && adopted && providers.HasMemo(ctx) {
			by, err := r.podsOfTick(ctx, opPlace)
			if err != nil {
				return nil, err
			}
			for _, p := range by[group] {
				if p.Cluster != nil && p.Cluster.ID == clusterID {
					out.Pods = append(out.Pods, p)
				}
			}
		} else if err := r.c.Do(ctx, opPlace, http.MethodGet, pathClusters+"/"+url.PathEscape(clusterID)+"/pods", nil, &out); err != nil {
			return nil, err
		}
		byRank, missing := ranked(out.Pods, count)
		if missing == "" {
			return byRank, nil
		}
		if waited >= patience {
			return nil, &membersPending{cluster: clusterID, missing: missing}
		}
		d := min(wait, patience-waited)
		if err := r.c.Sleep(ctx, d); err != nil {
			return nil, err
		}
		waited += d
		wait = min(2*wait, 15*time.Second)
	}
}

// ranked indexes alive members by rank; missing says what is not assigned
// yet ("" when every rank has its pod and address).
func ranked(pods []Pod, count int) (map[int]Pod, string) {
	byRank := map[int]Pod{}
	unranked := 0
	for _, p := range pods {
		if !alive(p) || p.Cluster == nil {
			continue
		}
		i, ok := index(p)
		if !ok {
			unranked++
			continue
		}
		if i < count {
			byRank[i] = p
		}
	}
	for i := 0; i < count; i++ {
		p, ok := byRank[i]
		switch {
		case !ok && unranked > 0:
			return nil, fmt.Sprintf("%d member(s) have no rank yet", unranked)
		case !ok:
			return nil, fmt.Sprintf("no member of rank %d is listed yet", i)
		case p.Cluster.IP == nil || *p.Cluster.IP == "":
			return nil, fmt.Sprintf("the member of rank %d has no overlay address yet", i)
		}
	}
	return byRank, ""
}

// memoKey names the adapter's listings in a tick's providers.Memo.
type memoKey struct {
	cloud *Cloud
	what  string
}

// clustersOfTick lists the account's Instant Clusters once a job tick.
func (r *Cloud) clustersOfTick(ctx context.Context) ([]Cluster, error) {
	return providers.Remember(ctx, memoKey{r, "clusters"}, func() ([]Cluster, error) { return r.clusters(ctx, opPlace) })
}

// podsOfTick lists the account's pods once a job tick.
func (r *Cloud) podsOfTick(ctx context.Context, op string) (map[string][]Pod, error) {
	return providers.Remember(ctx, memoKey{r, "pods"}, func() (map[string][]Pod, error) { return r.pods(ctx, op) })
}

// clusterNamed is the account's Instant Cluster named name (zero when none).
func (r *Cloud) clusterNamed(ctx context.Context, name string) (Cluster, error) {
	cls, err := r.clusters(ctx, opPlace)
	if err != nil {
		return Cluster{}, err
	}
	for _, c := range cls {
		if c.Name == name {
			return c, nil
		}
	}
	return Cluster{}, nil
}

// createCluster creates one Instant Cluster. After a transient failure the
// create may have happened: the clusters are listed by name before
// creating again.
func (r *Cloud) createCluster(ctx context.Context, cr CreateClusterRequest) (Cluster, error) {
	return cloudkit.Create(ctx, r.c, func() (Cluster, error) {
		var cl Cluster
		return cl, r.c.Do(ctx, opPlace, http.MethodPost, pathClusters, cr, &cl)
	}, func() (Cluster, bool, error) {
		c, err := r.clusterNamed(ctx, cr.Name)
		return c, c.ID != "", err
	})
}

// clusters lists the account's Instant Clusters.
func (r *Cloud) clusters(ctx context.Context, op string) ([]Cluster, error) {
	var out struct {
		Clusters []Cluster `json:"clusters"`
	}
	if err := r.c.Do(ctx, op, http.MethodGet, pathClusters, nil, &out); err != nil {
		return nil, err
	}
	return out.Clusters, nil
}

// container is the placement's image (or the default) and its ports, SSH first.
func (r *Cloud) container(req providers.PlaceRequest) (string, []string) {
	image := req.Image
	if image == "" {
		image = r.cfg.Image
	}
	ports := []string{"22/tcp"}
	for _, p := range req.Ports {
		if p != 22 {
			ports = append(ports, strconv.Itoa(p)+"/tcp")
		}
	}
	return image, ports
}

// ContainerArgs is the pod's command: the start-up script, base64-encoded
// so that it survives the single args string whole.
func ContainerArgs(script string) string {
	return "sh -c 'echo " + base64.StdEncoding.EncodeToString([]byte(script)) + " | base64 -d | sh'"
}

// create creates one pod. After a transient failure the create may have
// happened: the group's pods are listed before creating again.
func (r *Cloud) create(ctx context.Context, group string, i int, cr CreatePodRequest) (Pod, error) {
	return cloudkit.Create(ctx, r.c, func() (Pod, error) {
		var p Pod
		return p, r.c.Do(ctx, opPlace, http.MethodPost, pathPods, cr, &p)
	}, func() (Pod, bool, error) {
		by, err := r.pods(ctx, opPlace)
		if err != nil {
			return Pod{}, false, err
		}
		for _, p := range by[group] {
			if j, ok := index(p); ok && j == i && alive(p) {
				return p, true, nil
			}
		}
		return Pod{}, false, nil
	})
}

// publicKey is the PUBLIC_KEY of the group's pods: exactly the keys its
// own cluster trusts (the customer's selected keys, then the operator's),
// one a line. Set in the create, it is what startSsh installs: the
// description injects the account's registered keys only "unless the
// request already sets one", so no other customer's key reaches the pod.
func (r *Cloud) publicKey(req providers.PlaceRequest) string {
	var keys []string
	for _, k := range append(slices.Clone(req.SSHKeys), r.cfg.OperatorKey) {
		if k = strings.TrimSpace(k); k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return strings.Join(keys, "\n")
}

// operatorKeyOnly makes the account's registered SSH keys exactly the
// operator's (PUT replaces the whole set), once per adapter: the keys an
// earlier version registered for customers are removed, and none is ever
// added. Without an operator key the set is left as it is.
func (r *Cloud) operatorKeyOnly(ctx context.Context) error {
	op := strings.TrimSpace(r.cfg.OperatorKey)
	if op == "" {
		return nil
	}
	r.keys.Lock()
	defer r.keys.Unlock()
	if r.keysSet {
		return nil
	}
	var cur struct {
		Keys []string `json:"keys"`
	}
	if err := r.c.Do(ctx, opPlace, http.MethodGet, pathSSHKeys, nil, &cur); err != nil {
		return err
	}
	if len(cur.Keys) != 1 || strings.TrimSpace(cur.Keys[0]) != op {
		if err := r.c.Do(ctx, opPlace, http.MethodPut, pathSSHKeys, map[string][]string{"keys": {op}}, &cur); err != nil {
			return err
		}
	}
	r.keysSet = true
	return nil
}

// pods lists the account's pods, Instant Cluster members included (one
// call; the list is not paginated), by group.
func (r *Cloud) pods(ctx context.Context, op string) (map[string][]Pod, error) {
	var out struct {
		Pods []Pod `json:"pods"`
	}
	if err := r.c.Do(ctx, op, http.MethodGet, pathPods+"?includeClusterPods=true", nil, &out); err != nil {
		return nil, err
	}
	return fleet.ByGroup(out.Pods), nil
}

func index(p Pod) (int, bool) {
	if p.Cluster != nil {
		if p.Cluster.Rank == nil {
			return 0, false // not assigned yet: never read as rank 0
		}
		return *p.Cluster.Rank, *p.Cluster.Rank >= 0
	}
	return cloudkit.Rank(p.Env[EnvIndex], p.Name)
}

func alive(p Pod) bool { return p.Status != StatusTerminated }

// node maps a pod onto the neutral node. A RUNNING pod is only running
// for us once it has its direct SSH endpoint (RunPod reports RUNNING
// before the endpoint exists).
func node(p Pod, i int) providers.Node {
	n := providers.Node{ID: p.ID, Index: i, SSHUser: SSHUser}
	if p.Cost > 0 { // "current cost in USD per hour" (0 while stopped)
		n.MachineHourUSD = microUSD(p.Cost)
	}
	if d := p.SSH.Direct; d != nil {
		n.PublicHost, n.SSHPort = d.Host, d.Port
		if d.Username != "" {
			n.SSHUser = d.Username
		}
	}
	switch {
	case p.Cluster != nil && p.Cluster.IP != nil:
		n.PrivateIP = *p.Cluster.IP
	case p.GlobalNetworking.IP != nil:
		n.PrivateIP = *p.GlobalNetworking.IP
	}
	switch p.Status {
	case StatusProvisioning, StatusStarting:
		n.State = providers.NodePending
	case StatusRunning:
		n.State = providers.NodeRunning
		if p.SSH.Direct == nil {
			n.State, n.Message = providers.NodePending, "RunPod reports the pod running; its SSH endpoint is not published yet"
		}
	case StatusExited:
		n.State = providers.NodeStopped
	case StatusError:
		n.State, n.Message = providers.NodeFailed, "RunPod reports the pod in an unrecoverable error"
	case StatusTerminated:
		n.State = providers.NodeTerminated
	default:
		n.State, n.Message = providers.NodePending, "RunPod status "+p.Status
	}
	return n
}

// DescribeGroup reports the group's pods; ErrNotFound when RunPod knows none.
func (r *Cloud) DescribeGroup(ctx context.Context, groupName string) (providers.Group, error) {
	return providers.DescribeOne(ctx, Name, opDescribe, "pod", groupName, r.DescribeGroups)
}

// DescribeGroups reports many groups with one list call (R1), one a job
// tick.
func (r *Cloud) DescribeGroups(ctx context.Context, groupNames []string) (map[string]providers.Group, error) {
	by, err := r.podsOfTick(ctx, opDescribe)
	if err != nil {
		return nil, err
	}
	return fleet.Describe(groupNames, by), nil
}

// pod reads one pod of the group; a pod RunPod no longer knows, or of
// another group, is ErrNotFound.
func (r *Cloud) pod(ctx context.Context, op, group, id string) (Pod, error) {
	var p Pod
	if err := r.c.Do(ctx, op, http.MethodGet, pathPods+"/"+url.PathEscape(id), nil, &p); err != nil {
		return Pod{}, err
	}
	if p.Env[EnvGroup] != group || !alive(p) {
		return Pod{}, &providers.Error{Class: providers.ErrNotFound, Provider: Name, Op: op,
			Message: fmt.Sprintf("pod %s of group %s is gone", id, group)}
	}
	return p, nil
}

func (r *Cloud) action(ctx context.Context, op, id, action string) error {
	var p Pod
	return r.c.Do(ctx, op, http.MethodPost, pathPods+"/"+url.PathEscape(id)+"/action", map[string]string{"action": action}, &p)
}

// RestartNode restarts a running pod and starts a stopped one, on the same
// host (a stopped pod keeps its machine assignment). A pod in ERROR is
// ErrUnrecoverable; one still starting is ErrTransient; a member of an
// Instant Cluster is ErrUnsupported (RunPod refuses pod actions on it).
func (r *Cloud) RestartNode(ctx context.Context, groupName, nodeID string) error {
	p, err := r.pod(ctx, opRestart, groupName, nodeID)
	if err != nil {
		return err
	}
	if p.Cluster != nil {
		// The description: member pods "cannot be modified or deleted via
		// the pod endpoints"; a restart there answers 409 for ever.
		return &providers.Error{Class: providers.ErrUnsupported, Provider: Name, Op: opRestart, Code: "unsupported",
			Message: fmt.Sprintf("pod %s is a member of Instant Cluster %s, whose pods RunPod does not restart one by one", nodeID, p.Cluster.ID)}
	}
	switch p.Status {
	case StatusRunning:
		return r.action(ctx, opRestart, nodeID, "restart")
	case StatusExited:
		return r.action(ctx, opRestart, nodeID, "start")
	case StatusError:
		return &providers.Error{Class: providers.ErrUnrecoverable, Provider: Name, Op: opRestart,
			Message: fmt.Sprintf("pod %s is in an unrecoverable error", nodeID)}
	}
	return &providers.Error{Class: providers.ErrTransient, Provider: Name, Op: opRestart,
		Message: fmt.Sprintf("pod %s is %s; try again once it runs", nodeID, p.Status)}
}

// StopNode stops a running pod: its compute is released and billing for
// it ends; its volume and host assignment are kept. A pod that is not
// running is ErrValidation.
func (r *Cloud) StopNode(ctx context.Context, groupName, nodeID string) error {
	p, err := r.pod(ctx, opStop, groupName, nodeID)
	if err != nil {
		return err
	}
	if p.Cluster != nil {
		return &providers.Error{Class: providers.ErrUnsupported, Provider: Name, Op: opStop, Code: "unsupported",
			Message: fmt.Sprintf("pod %s is a member of Instant Cluster %s, whose pods are not stopped one by one", nodeID, p.Cluster.ID)}
	}
	if p.Status != StatusRunning {
		return &providers.Error{Class: providers.ErrValidation, Provider: Name, Op: opStop,
			Message: fmt.Sprintf("pod %s is %s, not running", nodeID, p.Status)}
	}
	return r.action(ctx, opStop, nodeID, "stop")
}

// PlaceNode is refused: a pod added to a placed group, or put in a gone
// one's place with its interconnect address (L10, X5), is not something
// RunPod's pods can promise. The refusal is ErrUnsupported and creates
// nothing; the join fails and the cluster stays as it was.
func (r *Cloud) PlaceNode(ctx context.Context, groupName string, index int, req providers.PlaceRequest) (providers.Node, error) {
	return providers.Node{}, cloudkit.NoPlaceNode(Name, opPlaceNode, "RunPod", req.Location)
}

// ReleaseNode deletes one pod of the group; the others are untouched. A
// pod RunPod no longer knows, of another group or already gone, is success.
func (r *Cloud) ReleaseNode(ctx context.Context, groupName, nodeID string) error {
	defer r.locks.Lock(groupName)()
	ctx = cloudkit.Urgent(ctx) // a release spends the budget's reserve
	by, err := r.pods(ctx, opReleaseNode)
	if err != nil {
		return err
	}
	for _, p := range by[groupName] {
		if p.ID != nodeID || !alive(p) {
			continue
		}
		if p.Cluster != nil {
			return &providers.Error{Class: providers.ErrUnsupported, Provider: Name, Op: opReleaseNode, Code: "unsupported",
				Message: fmt.Sprintf("pod %s is a member of Instant Cluster %s, which is deleted as a whole", nodeID, p.Cluster.ID)}
		}
		err := r.c.Do(ctx, opReleaseNode, http.MethodDelete, pathPods+"/"+url.PathEscape(p.ID), nil, nil)
		if err != nil && !errors.Is(err, providers.ErrNotFound) {
			return err
		}
	}
	return nil
}

// TerminateGroup deletes every pod of the group, an Instant Cluster with
// one DELETE /v2/clusters/{id}. Pods already gone are success.
func (r *Cloud) TerminateGroup(ctx context.Context, groupName string) error {
	defer r.locks.Lock(groupName)()
	return r.terminate(ctx, groupName)
}

func (r *Cloud) terminate(ctx context.Context, groupName string) error {
	ctx = cloudkit.Urgent(ctx) // a terminate spends the budget's reserve, and reads afresh
	by, err := r.pods(ctx, opTerminate)
	if err != nil {
		return err
	}
	cls, err := r.clusters(ctx, opTerminate)
	if err != nil {
		return err
	}
	ids := []string{}
	for _, c := range cls {
		if c.Name == groupName {
			ids = append(ids, c.ID) // members may not be listed yet
		}
	}
	for _, p := range by[groupName] {
		if p.Cluster != nil && !slices.Contains(ids, p.Cluster.ID) {
			ids = append(ids, p.Cluster.ID)
		}
	}
	for _, id := range ids {
		err := r.c.Do(ctx, opTerminate, http.MethodDelete, pathClusters+"/"+url.PathEscape(id), nil, nil)
		if err != nil && !errors.Is(err, providers.ErrNotFound) {
			return err
		}
	}
	for _, p := range by[groupName] {
		if !alive(p) || p.Cluster != nil {
			continue
		}
		err := r.c.Do(ctx, opTerminate, http.MethodDelete, pathPods+"/"+url.PathEscape(p.ID), nil, nil)
		if err != nil && !errors.Is(err, providers.ErrNotFound) {
			return err
		}
	}
	return nil
}
