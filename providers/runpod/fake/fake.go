// Package fake is an in-memory RunPod REST API v2 server for tests: the
// documented paths, methods, Bearer authentication, request and response
// JSON, RFC 9457 problem bodies, RateLimit headers and 429 answers with
// Retry-After, over state that behaves like the cloud's (pods that go
// PROVISIONING → STARTING → RUNNING, first without and then with their SSH
// endpoint, on a clock; stop, start, restart and delete; GPU stock per data
// center that decides both the catalog and the create).
//
// Instant Clusters (POST /v2/clusters) are served for the (GPU, data
// center) pairs in ClusterCaps: the catalog's product=CLUSTER stock, one
// create that places every member pod in one data center or none (the
// capacity 400), member pods with cluster{id, rank, ip} on a private
// overlay, listed by GET /v2/pods only with includeClusterPods=true, GET
// /v2/clusters/{id}/pods, and DELETE /v2/clusters/{id} deleting the
// members with it. A member pod is not deleted, stopped, started or
// restarted through the pod endpoints (409), as the description says. The pod counts
// accepted are the description's podCount range, 2–250.
//
// Its lists are wrapped ({"pods": [...]}) and not paginated: REST v2
// defines no pagination parameters.
//
// Start it with httptest.NewServer(fake.New(...)); it never leaves loopback.
package fake

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clusterdeck/clusterdeck/providers/fakekit"
	"github.com/clusterdeck/clusterdeck/providers/runpod"
)

// Cap is a (GPU type id, data center) pair.
type Cap struct{ GPU, DC string }

// Fault is a scripted answer to a request on Method and Path (Path is
// matched as a prefix, e.g. "/v2/pods"); it is used once.
type Fault struct {
	Method, Path string
	Status       int
	Detail       string // problem detail; empty sends a body that is not a problem object
	RetryAfter   string
	Apply        bool // carry the request out first: the answer is lost, the effect is not
	After        int  // let this many matching requests through first
	// Slow moves the test's clock before the answer (the answer took that
	// long); with Status 0 the request is answered as usual.
	Slow func()
}

// Server is the fake. Exported fields are set before serving (Requests
// and TooMany, which counts the 429 answers the minute window sent, come
// with fakekit.Base).
type Server struct {
	fakekit.Base
	Key  string
	Now  func() time.Time
	GPUs []runpod.GpuType // catalog, without availability (computed from Stock)
	DCs  map[string]string
	// Stock is the free GPUs per (GPU, data center); a pod takes its count
	// and a delete gives them back (a stopped pod keeps its host's GPUs).
	Stock map[Cap]int
	// Balance false answers 402 to creates.
	Broke bool
	// BootDelay: create → RUNNING with SSH; StartDelay: start → RUNNING.
	BootDelay, StartDelay time.Duration
	// RankDelay: an Instant Cluster's member pods are listed with
	// "rank": null and no "ip" for this long after the create, as the
	// description allows ("null until the index is assigned during
	// provisioning"; "omitted until the address is assigned").
	RankDelay time.Duration
	// ListDelay: an Instant Cluster's member pods are not listed at all
	// (GET /v2/pods, GET /v2/clusters/{id}/pods) for this long after the
	// create, while the cluster is (the description allows a cluster whose
	// members are not listed yet).
	ListDelay time.Duration
	// ClusterCaps are the (GPU, data center) pairs that sell Instant
	// Clusters.
	ClusterCaps map[Cap]bool
	// ClusterPrices is the per-GPU secure price the catalog answers for
	// product=CLUSTER where it differs from the pods' (GraphQL's
	// clusterPrice is its own field).
	ClusterPrices map[string]float64
	// Billed is the per-GPU price pods of a GPU type are billed at (their
	// cost) where it differs from the catalog's: a cloud billing above the
	// price it listed.
	Billed map[string]float64
	// PerMinute is the minute window's quota (0 = none): beyond it, 429
	// with Retry-After until the window resets.
	PerMinute int

	pods     map[string]*pod
	order    []string
	keys     []string
	creates  []runpod.CreatePodRequest
	clusters map[string]*runpod.Cluster
	corder   []string
	ccreates []runpod.CreateClusterRequest
	seq      int
}

type pod struct {
	runpod.Pod
	created, readyAt time.Time
	num              int
	// rank and ip are an Instant Cluster member's, shown from rankAt on.
	rank   int
	ip     string
	rankAt time.Time
	listAt time.Time // a member is listed from then on
	// trusted is the SSH keys startSsh installed in the pod (what its
	// sshd accepts).
	trusted []string
}

// unlisted: an Instant Cluster's member not listed yet (ListDelay).
func (s *Server) unlisted(p *pod) bool { return p.Cluster != nil && s.Now().Before(p.listAt) }

// Catalog is the spec's GPU type example plus an H100 type.
func Catalog() ([]runpod.GpuType, map[string]string) {
	var rtx, h100 runpod.GpuType
	rtx.ID, rtx.Name, rtx.Pool, rtx.Manufacturer, rtx.Memory, rtx.Secure, rtx.Community = "NVIDIA GeForce RTX 4090", "RTX 4090", "ADA_24", "NVIDIA", 24, true, true
	rtx.Price.Secure, rtx.Price.Community = 0.44, 0.31
	rtx.MaxCount.Secure, rtx.MaxCount.Community = 8, 4
	h100.ID, h100.Name, h100.Pool, h100.Manufacturer, h100.Memory, h100.Secure = "NVIDIA H100 80GB HBM3", "H100 SXM", "HOPPER_141", "NVIDIA", 80, true
	h100.Price.Secure = 2.99
	h100.MaxCount.Secure = 8
	return []runpod.GpuType{rtx, h100}, map[string]string{"US-KS-2": "US Kansas 2", "US-TX-3": "US Texas 3", "EU-RO-1": "EU Romania 1"}
}

// New returns a fake with the Catalog, no stock, and the spec's example
// rate-limit policy of 60 requests a minute.
func New(key string, now func() time.Time) *Server {
	gpus, dcs := Catalog()
	return &Server{Key: key, Now: now, GPUs: gpus, DCs: dcs, Stock: map[Cap]int{}, ClusterCaps: map[Cap]bool{},
		BootDelay: 3 * time.Minute, StartDelay: time.Minute, RankDelay: 20 * time.Second, PerMinute: 60}
}

// Inject queues scripted answers.
func (s *Server) Inject(f ...Fault) {
	for _, f := range f {
		k := fakekit.Fault{Method: f.Method, Path: f.Path, Status: f.Status, RetryAfter: f.RetryAfter, Apply: f.Apply, After: f.After, Slow: f.Slow}
		if f.Detail != "" { // else a body that is not a problem object
			k.Body = func(w http.ResponseWriter, status int) { problem(w, status, f.Detail) }
		}
		s.Queue(k)
	}
}

// Creates returns every create body accepted so far.
func (s *Server) Creates() []runpod.CreatePodRequest {
	s.Lock()
	defer s.Unlock()
	return slices.Clone(s.creates)
}

// ClusterCreates returns every cluster create body accepted so far.
func (s *Server) ClusterCreates() []runpod.CreateClusterRequest {
	s.Lock()
	defer s.Unlock()
	return slices.Clone(s.ccreates)
}

// ClusterCreatesIDs returns the ids of every cluster created so far, in order.
func (s *Server) ClusterCreatesIDs() []string {
	s.Lock()
	defer s.Unlock()
	return slices.Clone(s.corder)
}

// Clusters returns the clusters not deleted, in creation order.
func (s *Server) Clusters() []runpod.Cluster {
	s.Lock()
	defer s.Unlock()
	var out []runpod.Cluster
	for _, id := range s.corder {
		if c, ok := s.clusters[id]; ok {
			out = append(out, s.cluster(c))
		}
	}
	return out
}

// Live returns the pods not deleted, in creation order.
func (s *Server) Live() []runpod.Pod {
	s.Lock()
	defer s.Unlock()
	var out []runpod.Pod
	for _, id := range s.order {
		if p, ok := s.pods[id]; ok {
			s.advance(p)
			out = append(out, p.Pod)
		}
	}
	return out
}

// SetStatus forces a pod's status (e.g. ERROR).
func (s *Server) SetStatus(id, status string) {
	s.Lock()
	defer s.Unlock()
	if p, ok := s.pods[id]; ok {
		p.Status, p.readyAt = status, time.Time{}
		p.Actions = actions(status)
	}
}

// Trusted returns the SSH keys each live pod accepts, by pod name: as the
// description says of startSsh, the create's own PUBLIC_KEY when it sets
// one, else every key the account had registered at the create; none
// without startSsh or while the account has no key registered.
func (s *Server) Trusted() map[string][]string {
	s.Lock()
	defer s.Unlock()
	out := map[string][]string{}
	for _, p := range s.pods {
		out[p.Name] = slices.Clone(p.trusted)
	}
	return out
}

// SetSSHKeys registers keys on the account, as its holder would.
func (s *Server) SetSSHKeys(keys ...string) {
	s.Lock()
	defer s.Unlock()
	s.keys = slices.Clone(keys)
}

// SSHKeys returns the account's registered keys.
func (s *Server) SSHKeys() []string {
	s.Lock()
	defer s.Unlock()
	return slices.Clone(s.keys)
}

func actions(status string) []string {
	switch status {
	case runpod.StatusRunning:
		return []string{"stop", "restart", "terminate"}
	case runpod.StatusExited, runpod.StatusError:
		return []string{"start", "terminate"}
	case runpod.StatusProvisioning, runpod.StatusStarting:
		return []string{"stop", "terminate"}
	}
	return []string{}
}

// advance moves a pod along its clock: a third of the boot provisioning,
// a third starting, a third RUNNING without the SSH endpoint (as observed
// on the live API), then RUNNING with it.
func (s *Server) advance(p *pod) {
	if p.Cluster != nil && p.Cluster.Rank == nil && !s.Now().Before(p.rankAt) {
		rank, ip := p.rank, p.ip
		p.Cluster.Rank, p.Cluster.IP = &rank, &ip
	}
	if p.readyAt.IsZero() {
		return
	}
	now := s.Now()
	left := p.readyAt.Sub(now)
	third := s.BootDelay / 3
	switch {
	case left <= 0:
		p.Status = runpod.StatusRunning
		host := fmt.Sprintf("198.51.100.%d", 10+p.num)
		port := 30000 + p.num
		p.SSH.Direct = &runpod.SSHEndpoint{Host: host, Port: port, Username: "root", Command: fmt.Sprintf("ssh root@%s -p %d", host, port)}
		p.SSH.Proxy = &runpod.SSHEndpoint{Host: "ssh.runpod.io", Port: 22, Username: p.ID + "-64411eb2", Command: "ssh " + p.ID + "-64411eb2@ssh.runpod.io"}
		pub := port
		p.Runtime = &struct {
			Uptime int                  `json:"uptime"`
			Ports  []runpod.RuntimePort `json:"ports"`
		}{Uptime: int(now.Sub(p.readyAt) / time.Second), Ports: []runpod.RuntimePort{{Private: 22, Public: &pub, Type: "tcp", IP: &host}}}
		started := p.readyAt.UTC().Format(time.RFC3339)
		p.StartedAt = &started
		p.readyAt = time.Time{}
	case left <= third:
		p.Status = runpod.StatusRunning // not reachable yet
	case left <= 2*third:
		p.Status = runpod.StatusStarting
	}
	p.Actions = actions(p.Status)
}

// problem answers an RFC 9457 problem body.
func problem(w http.ResponseWriter, status int, detail string, errs ...string) {
	fakekit.Reply(w, "application/problem+json", status, runpod.Problem{Title: http.StatusText(status), Status: status, Detail: detail, Errors: errs})
}

// ServeHTTP answers the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.Lock()
	defer s.Unlock()
	s.Count(r.Method, r.URL.Path)
	if r.Header.Get("Authorization") != "Bearer "+s.Key {
		problem(w, http.StatusUnauthorized, "missing bearer token")
		return
	}
	if s.PerMinute > 0 {
		left, reset, ok := s.Window(s.Now(), s.PerMinute)
		w.Header().Set("RateLimit", fmt.Sprintf(`"minute";r=%d;t=%d`, left, reset))
		w.Header().Set("RateLimit-Policy", fmt.Sprintf(`"minute";q=%d;w=60`, s.PerMinute))
		if !ok {
			w.Header().Set("Retry-After", strconv.Itoa(reset))
			problem(w, http.StatusTooManyRequests, "rate limit exceeded for the minute window")
			return
		}
	}
	if s.Scripted(w, r.Method, r.URL.Path, func(w http.ResponseWriter) { s.route(w, r) }) {
		return
	}
	s.route(w, r)
}

func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case path == "/v2/catalog/gpus" && r.Method == http.MethodGet:
		s.listGPUs(w, r)
	case path == "/v2/account/ssh-keys" && r.Method == http.MethodGet:
		fakekit.JSON(w, 200, map[string][]string{"keys": append([]string{}, s.keys...)})
	case path == "/v2/account/ssh-keys" && r.Method == http.MethodPut:
		var in struct {
			Keys []string `json:"keys"`
		}
		if err := strict(r, &in); err != nil {
			problem(w, 422, "Request validation failed.", err.Error())
			return
		}
		s.keys = in.Keys
		fakekit.JSON(w, 200, map[string][]string{"keys": append([]string{}, s.keys...)})
	case path == "/v2/pods" && r.Method == http.MethodGet:
		members := r.URL.Query().Get("includeClusterPods") == "true"
		out := []runpod.Pod{}
		for _, id := range s.order {
			if p, ok := s.pods[id]; ok && (members || p.Cluster == nil) && !s.unlisted(p) {
				s.advance(p)
				out = append(out, p.Pod)
			}
		}
		fakekit.JSON(w, 200, map[string][]runpod.Pod{"pods": out})
	case path == "/v2/pods" && r.Method == http.MethodPost:
		s.create(w, r)
	case strings.HasPrefix(path, "/v2/pods/"):
		rest := strings.TrimPrefix(path, "/v2/pods/")
		id, verb, _ := strings.Cut(rest, "/")
		p, ok := s.pods[id]
		if !ok {
			problem(w, 404, "pod not found")
			return
		}
		s.advance(p)
		switch {
		case verb == "" && r.Method == http.MethodGet:
			fakekit.JSON(w, 200, p.Pod)
		case verb == "" && r.Method == http.MethodDelete && p.Cluster != nil:
			problem(w, 409, "pod "+id+" belongs to cluster "+p.Cluster.ID+"; delete the cluster")
		case verb == "" && r.Method == http.MethodDelete:
			s.Stock[Cap{p.GPU.ID, *p.DataCenterID}] += p.GPU.Count
			delete(s.pods, id)
			w.WriteHeader(http.StatusNoContent)
		case verb == "action" && r.Method == http.MethodPost:
			s.act(w, r, p)
		default:
			problem(w, 405, "method not allowed")
		}
	case path == "/v2/clusters" && r.Method == http.MethodPost:
		s.createCluster(w, r)
	case path == "/v2/clusters" && r.Method == http.MethodGet:
		out := []runpod.Cluster{}
		for _, id := range s.corder {
			if c, ok := s.clusters[id]; ok {
				out = append(out, s.cluster(c))
			}
		}
		fakekit.JSON(w, 200, map[string][]runpod.Cluster{"clusters": out})
	case strings.HasPrefix(path, "/v2/clusters/"):
		id, verb, _ := strings.Cut(strings.TrimPrefix(path, "/v2/clusters/"), "/")
		c, ok := s.clusters[id]
		if !ok {
			problem(w, 404, "resource not found")
			return
		}
		switch {
		case verb == "" && r.Method == http.MethodGet:
			fakekit.JSON(w, 200, s.cluster(c))
		case verb == "pods" && r.Method == http.MethodGet:
			out := []runpod.Pod{}
			for _, pid := range s.order {
				if p, ok := s.pods[pid]; ok && p.Cluster != nil && p.Cluster.ID == id && !s.unlisted(p) {
					s.advance(p)
					out = append(out, p.Pod)
				}
			}
			fakekit.JSON(w, 200, map[string][]runpod.Pod{"pods": out})
		case verb == "" && r.Method == http.MethodDelete:
			for pid, p := range s.pods {
				if p.Cluster != nil && p.Cluster.ID == id {
					s.Stock[Cap{p.GPU.ID, *p.DataCenterID}] += p.GPU.Count
					delete(s.pods, pid)
				}
			}
			delete(s.clusters, id)
			w.WriteHeader(http.StatusNoContent)
		default:
			problem(w, 405, "method not allowed")
		}
	default:
		problem(w, 404, "resource not found")
	}
}

// strict decodes a body strictly, its refusal worded as RunPod's validator words it.
func strict(r *http.Request, v any) error {
	if err := fakekit.Decode(r, v); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return fmt.Errorf("$: additional properties %s not allowed", strings.ReplaceAll(name, `"`, "'"))
		}
		return fmt.Errorf("$: %v", err)
	}
	return nil
}

func level(free, count int) string {
	switch n := free / max(count, 1); {
	case n <= 0:
		return runpod.AvailNone
	case n == 1:
		return runpod.AvailLow
	case n == 2:
		return runpod.AvailMedium
	}
	return runpod.AvailHigh
}

func (s *Server) listGPUs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	include := q.Get("include") == "AVAILABILITY"
	if include && q.Get("product") == "" {
		problem(w, 400, "product is required with include=AVAILABILITY")
		return
	}
	count := 1
	if c := q.Get("count"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 {
			problem(w, 422, "Request validation failed.", "count: must be a positive integer")
			return
		}
		count = n
	}
	out := []runpod.GpuType{}
	for _, g := range s.GPUs {
		if include {
			best := runpod.AvailNone
			var dcs []string
			for dc := range s.DCs {
				dcs = append(dcs, dc)
			}
			slices.Sort(dcs)
			for _, dc := range dcs {
				l := level(s.Stock[Cap{g.ID, dc}], count)
				if q.Get("product") == "CLUSTER" && !s.ClusterCaps[Cap{g.ID, dc}] {
					l = runpod.AvailNone // no Instant Clusters of this GPU here
				}
				g.DataCenters = append(g.DataCenters, runpod.DataCenterAvailability{ID: dc, Name: s.DCs[dc], Availability: l})
				if rank(l) > rank(best) {
					best = l
				}
			}
			g.Availability = best
			if p, ok := s.ClusterPrices[g.ID]; ok && q.Get("product") == "CLUSTER" {
				g.Price.Secure = p
			}
		}
		out = append(out, g)
	}
	fakekit.JSON(w, 200, map[string][]runpod.GpuType{"gpus": out})
}

func rank(l string) int {
	return slices.Index([]string{runpod.AvailNone, runpod.AvailLow, runpod.AvailMedium, runpod.AvailHigh}, l)
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var in runpod.CreatePodRequest
	if err := strict(r, &in); err != nil {
		problem(w, 422, "Request validation failed.", err.Error())
		return
	}
	switch {
	case in.Name == "":
		problem(w, 422, "Request validation failed.", "$.name: minLength 1")
		return
	case in.GPU == nil:
		problem(w, 400, "exactly one of gpu or cpu must be set")
		return
	case in.Image == "":
		problem(w, 400, "image is required unless templateId is set")
		return
	case in.Cloud != "" && in.Cloud != "SECURE" && in.Cloud != "COMMUNITY":
		problem(w, 422, "Request validation failed.", "$.cloud: value must be one of 'SECURE', 'COMMUNITY'")
		return
	}
	k := slices.IndexFunc(s.GPUs, func(g runpod.GpuType) bool { return g.ID == in.GPU.ID })
	if k < 0 {
		problem(w, 404, "gpu type not found")
		return
	}
	if in.GPU.Count < 1 || in.GPU.Count > s.GPUs[k].MaxCount.Secure {
		problem(w, 400, fmt.Sprintf("gpu count %d exceeds the maximum of %d for this GPU type", in.GPU.Count, s.GPUs[k].MaxCount.Secure))
		return
	}
	if s.Broke {
		problem(w, 402, "insufficient balance")
		return
	}
	dcs := in.DataCenterIDs
	if len(dcs) == 0 {
		for dc := range s.DCs {
			dcs = append(dcs, dc)
		}
		slices.Sort(dcs)
	}
	dc := ""
	for _, d := range dcs {
		if _, ok := s.DCs[d]; !ok {
			problem(w, 400, "unknown data center "+d)
			return
		}
		if dc == "" && s.Stock[Cap{in.GPU.ID, d}] >= in.GPU.Count {
			dc = d
		}
	}
	if dc == "" {
		problem(w, 400, "There are no longer any instances available with the requested specifications. Please refresh and try again.")
		return
	}
	p := s.newPod(in, dc, k)
	s.creates = append(s.creates, in)
	fakekit.JSON(w, 201, p.Pod)
}

// newPod places one pod of in in dc (k is its GPU type's index).
func (s *Server) newPod(in runpod.CreatePodRequest, dc string, k int) *pod {
	s.Stock[Cap{in.GPU.ID, dc}] -= in.GPU.Count
	s.seq++
	now := s.Now()
	p := &pod{created: now, readyAt: now.Add(s.BootDelay), num: s.seq}
	p.ID = fmt.Sprintf("pod%07dx", s.seq)
	p.Name, p.Image, p.Args, p.Disk, p.Ports, p.Env = in.Name, in.Image, in.Args, in.Disk, in.Ports, maps.Clone(in.Env)
	if p.Env == nil {
		p.Env = map[string]string{}
	}
	if p.Ports == nil {
		p.Ports = []string{}
	}
	p.Status, p.Actions = runpod.StatusProvisioning, actions(runpod.StatusProvisioning)
	p.GPU = &runpod.GPUConfig{ID: in.GPU.ID, Count: in.GPU.Count}
	p.Cloud = "SECURE"
	p.DataCenterID = &dc
	cuda := "12.8"
	p.CudaVersion = &cuda
	p.Cost = s.price(in.GPU.ID) * float64(in.GPU.Count)
	p.Mounts = map[string]any{}
	p.CreatedAt = now.UTC().Format(time.RFC3339)
	if in.StartSSH && len(s.keys) > 0 {
		// "injects a PUBLIC_KEY environment variable carrying your
		// account's registered SSH public keys, unless the request already
		// sets one. Requires registered keys — with none registered the
		// flag does nothing and the pod has no SSH access."
		if pub, ok := in.Env[runpod.EnvPublicKey]; ok {
			for _, k := range strings.Split(pub, "\n") {
				if k = strings.TrimSpace(k); k != "" {
					p.trusted = append(p.trusted, k)
				}
			}
		} else {
			p.trusted = slices.Clone(s.keys)
		}
	}
	if s.pods == nil {
		s.pods = map[string]*pod{}
	}
	s.pods[p.ID] = p
	s.order = append(s.order, p.ID)
	return p
}

// price is the per-GPU price a pod of gpu is billed at.
func (s *Server) price(gpu string) float64 {
	if v, ok := s.Billed[gpu]; ok {
		return v
	}
	return s.GPUs[slices.IndexFunc(s.GPUs, func(g runpod.GpuType) bool { return g.ID == gpu })].Price.Secure
}

// cluster is c with its pod counts and primary as they are now.
func (s *Server) cluster(c *runpod.Cluster) runpod.Cluster {
	out := *c
	out.Pods.Total, out.Pods.ByStatus, out.Primary = 0, map[string]int{}, nil
	for _, id := range s.order {
		p, ok := s.pods[id]
		if !ok || p.Cluster == nil || p.Cluster.ID != c.ID || s.unlisted(p) {
			continue
		}
		s.advance(p)
		out.Pods.Total++
		out.Pods.ByStatus[p.Status]++
		if p.Cluster.Rank != nil && *p.Cluster.Rank == 0 {
			out.Primary = &struct {
				PodID       string  `json:"podId"`
				Status      string  `json:"status"`
				SSHEndpoint *string `json:"sshEndpoint,omitempty"`
			}{PodID: p.ID, Status: p.Status}
			if d := p.SSH.Direct; d != nil {
				ep := fmt.Sprintf("%s:%d", d.Host, d.Port)
				out.Primary.SSHEndpoint = &ep
			}
		}
	}
	return out
}

// createCluster places every member pod in one data center, or none.
func (s *Server) createCluster(w http.ResponseWriter, r *http.Request) {
	var in runpod.CreateClusterRequest
	if err := strict(r, &in); err != nil {
		problem(w, 422, "Request validation failed.", err.Error())
		return
	}
	c := in.Compute
	switch {
	case in.Name == "":
		problem(w, 422, "Request validation failed.", "$.name: minLength 1")
		return
	case in.Type != "" && !slices.Contains([]string{"APPLICATION", "TRAINING", "SLURM", "RAY"}, in.Type):
		problem(w, 422, "Request validation failed.", "$.type: value must be one of 'APPLICATION', 'TRAINING', 'SLURM', 'RAY'")
		return
	case c.GPUTypeID == "" || c.GPUCountPerPod < 1 || c.PodCount < 1:
		problem(w, 422, "Request validation failed.", "$.compute: gpuTypeId, gpuCountPerPod and podCount are required")
		return
	case in.Image == "":
		problem(w, 400, "image is required unless templateId is set")
		return
	}
	k := slices.IndexFunc(s.GPUs, func(g runpod.GpuType) bool { return g.ID == c.GPUTypeID })
	if k < 0 {
		problem(w, 404, "gpu type not found")
		return
	}
	if c.GPUCountPerPod > s.GPUs[k].MaxCount.Secure {
		problem(w, 400, fmt.Sprintf("gpuCountPerPod %d exceeds the maximum of %d for this GPU type", c.GPUCountPerPod, s.GPUs[k].MaxCount.Secure))
		return
	}
	if c.PodCount < runpod.ClusterMinPods || c.PodCount > runpod.ClusterMaxPods {
		problem(w, 400, fmt.Sprintf("podCount %d is not a supported cluster size", c.PodCount))
		return
	}
	if s.Broke {
		problem(w, 402, "insufficient balance")
		return
	}
	dcs := in.DataCenterIDs
	if len(dcs) == 0 {
		for dc := range s.DCs {
			dcs = append(dcs, dc)
		}
		slices.Sort(dcs)
	}
	dc := ""
	for _, d := range dcs {
		if _, ok := s.DCs[d]; !ok {
			problem(w, 400, "unknown data center "+d)
			return
		}
		if dc == "" && s.ClusterCaps[Cap{c.GPUTypeID, d}] && s.Stock[Cap{c.GPUTypeID, d}] >= c.PodCount*c.GPUCountPerPod {
			dc = d // a cluster is always placed within a single data center
		}
	}
	if dc == "" {
		problem(w, 400, "There are no longer any instances available with the requested specifications. Please refresh and try again.")
		return
	}
	s.seq++
	cl := &runpod.Cluster{ID: fmt.Sprintf("clu%07dx", s.seq), Name: in.Name, Type: in.Type, Compute: c, DataCenterID: &dc,
		CreatedAt: s.Now().UTC().Format(time.RFC3339)}
	if cl.Type == "" {
		cl.Type = "APPLICATION"
	}
	vx, port, octet := 4000+s.seq, 4789, 64+s.seq%64
	cidr := fmt.Sprintf("10.%d.0.0/16", octet)
	cl.Network = &struct {
		CIDR      string `json:"cidr"`
		VxlanID   *int   `json:"vxlanId,omitempty"`
		VxlanPort *int   `json:"vxlanPort,omitempty"`
	}{CIDR: cidr, VxlanID: &vx, VxlanPort: &port}
	if s.clusters == nil {
		s.clusters = map[string]*runpod.Cluster{}
	}
	s.clusters[cl.ID] = cl
	s.corder = append(s.corder, cl.ID)
	for rank := 0; rank < c.PodCount; rank++ {
		p := s.newPod(runpod.CreatePodRequest{Name: fmt.Sprintf("%s-%d", in.Name, rank), Image: in.Image, Args: in.Args, Disk: in.Disk,
			Ports: in.Ports, Env: in.Env, StartSSH: in.StartSSH, GPU: &runpod.GPUConfig{ID: c.GPUTypeID, Count: c.GPUCountPerPod}}, dc, k)
		p.rank, p.ip, p.rankAt = rank, fmt.Sprintf("10.%d.0.%d", octet, rank+2), s.Now().Add(s.RankDelay)
		p.listAt = s.Now().Add(s.ListDelay)
		p.Cluster = &runpod.PodCluster{ID: cl.ID}
		s.advance(p) // a RankDelay of 0 assigns at once
		if role := memberRole(cl.Type, rank); role != "" {
			p.Cluster.Role = &role // the description: omitted for TRAINING and APPLICATION members
		}
	}
	s.ccreates = append(s.ccreates, in)
	fakekit.JSON(w, 201, s.cluster(cl))
}

// memberRole is the description's PodClusterRole of a member: SLURM and RAY
// clusters assign one (rank 0 leads), the others none.
func memberRole(typ string, rank int) string {
	switch {
	case typ == "SLURM" && rank == 0:
		return "SLURM_CONTROLLER"
	case typ == "SLURM":
		return "SLURM_COMPUTE"
	case typ == "RAY" && rank == 0:
		return "RAY_HEAD"
	case typ == "RAY":
		return "RAY_WORKER"
	}
	return ""
}

func (s *Server) act(w http.ResponseWriter, r *http.Request, p *pod) {
	var in struct {
		Action string `json:"action"`
	}
	if err := strict(r, &in); err != nil {
		problem(w, 422, "Request validation failed.", err.Error())
		return
	}
	if !slices.Contains([]string{"start", "stop", "restart", "terminate"}, in.Action) {
		problem(w, 422, "Request validation failed.", "$.action: value must be one of 'start', 'stop', 'restart', 'terminate'")
		return
	}
	if p.Cluster != nil {
		// The description: member pods "cannot be modified or deleted via
		// the pod endpoints".
		problem(w, 409, fmt.Sprintf("pod %s is a member of cluster %s: member pods cannot be modified through the pod endpoints", p.ID, p.Cluster.ID))
		return
	}
	if !slices.Contains(p.Actions, in.Action) {
		problem(w, 409, fmt.Sprintf("action %s is not valid for a pod in status %s", in.Action, p.Status))
		return
	}
	now := s.Now()
	switch in.Action {
	case "stop":
		p.Status, p.readyAt, p.Cost, p.Runtime = runpod.StatusExited, time.Time{}, 0, nil
		p.SSH.Direct, p.SSH.Proxy = nil, nil
	case "start":
		p.Status, p.readyAt = runpod.StatusStarting, now.Add(s.StartDelay)
		p.Cost = float64(p.GPU.Count) * s.price(p.GPU.ID)
	case "restart":
		// The pod stays RUNNING throughout.
	case "terminate":
		s.Stock[Cap{p.GPU.ID, *p.DataCenterID}] += p.GPU.Count
		delete(s.pods, p.ID)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	p.Actions = actions(p.Status)
	fakekit.JSON(w, 200, p.Pod)
}
