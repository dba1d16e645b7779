package jobs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"github.com/clusterdeck/clusterdeck/providers"
	"github.com/clusterdeck/clusterdeck/providers/sim"
	"gorm.io/gorm"
)

// mountSteps returns the mounts steps machine rank's agent ran.
func (w *world) mountSteps(c models.Cluster, rank int) []sim.Ran {
	var out []sim.Ran
	for _, r := range w.cloud.Ran(c.GroupName(), rank) {
		if r.Step == sim.MountsStep {
			out = append(out, r)
		}
	}
	return out
}

func (w *world) nodeLog(c models.Cluster, rank int) string {
	w.t.Helper()
	logs, err := w.store.TailNodeLogs(context.Background(), w.org.ID, c.ID, rank, 200)
	if err != nil {
		w.t.Fatal(err)
	}
	var text []string
	for _, l := range logs {
		text = append(text, l.Text)
	}
	return strings.Join(text, "\n")
}

// launchVolume launches nodes machines of accel with a new volume of gb GB
// (persistentGb, V2).
func (w *world) launchVolume(accel string, nodes, gpus, gb int) models.Cluster {
	w.t.Helper()
	ctx := context.Background()
	q, err := w.store.CreateQuote(ctx, w.org.ID, w.env.ID, models.ShapeQuery{Accelerator: accel, Nodes: nodes, GPUsPerNode: gpus, VolumeGB: gb})
	if err != nil {
		w.t.Fatal(err)
	}
	c, _, err := w.store.LaunchCluster(ctx, models.LaunchParams{OrgID: w.org.ID, EnvID: w.env.ID, QuoteID: q.ID, Actor: "test@example.com",
		Workload: models.Workload{Name: "mounted", Software: "none"}})
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

// V2, V4 through the placement request and the real agent: the volume
// created with the cluster reaches the simulated cloud with the placement;
// once the cluster is ready, on a vm node-0 exports /shared to exactly its
// peers with the hostfile in it and syncs the volume into /shared/volume
// (and back, every minute and at shutdown), and every other node mounts
// /shared from node-0; each node's log shows what was mounted.
func TestVolumeMountsOnVM(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		c := w.launchVolume("H100_80GB", 3, 8, 250)
		for i := 0; i < 40 && w.cluster(c.ID).Status != models.StatusReady; i++ {
			for rank := range 3 {
				if m := w.mountSteps(c, rank); len(m) > 0 {
					t.Fatalf("node-%d mounted before the cluster was ready", rank)
				}
			}
			w.clock.Advance(30 * time.Second)
			w.tick()
		}
		if st := w.cluster(c.ID).Status; st != models.StatusReady {
			t.Fatalf("status %s\n%s", st, w.events(c.ID))
		}
		c = w.cluster(c.ID)
		v := w.cloud.Volume(c.GroupName())
		if v == nil || v.ID != c.VolumeID || v.SizeGB != 250 || v.Name != "mounted" {
			t.Fatalf("the placement carried volume %+v, want the cluster's %s", v, c.VolumeID)
		}
		w.clock.Advance(10 * time.Second)
		w.tick()
		nodes, _ := w.store.NodesFor(context.Background(), c.ID)
		w.clock.Advance(10 * time.Second)
		w.tick() // the heartbeat after the step carries its end
		states, err := w.store.NodeMounts(context.Background(), w.org.ID, c.ID)
		if err != nil || len(states) != 3 {
			t.Fatalf("mounts states %+v %v", states, err)
		}
		for _, st := range states {
			if st.State != models.MountsMounted || st.EndedAt == nil || st.Error != "" {
				t.Errorf("%s's mounts: %+v", st.Node, st)
			}
		}
		for _, n := range nodes {
			m := w.mountSteps(c, n.Rank)
			if len(m) != 1 {
				t.Fatalf("%s ran %d mounts steps, want 1", n.Name, len(m))
			}
			script, log := m[0].Script, w.nodeLog(c, n.Rank)
			if n.Rank == 0 {
				for _, want := range []string{"exportfs -rav", "/shared 10.77.0.2(rw,sync,no_subtree_check,no_root_squash) 10.77.0.3(rw,",
					"cat > /shared/hostfile", "node-2 slots=8", "rsync -a /mnt/clusterdeck-volume/ '/shared/volume'/",
					"rsync -a --delete /shared/volume/ /mnt/clusterdeck-volume/", "/etc/cron.d/clusterdeck-volume", "ExecStop=/usr/local/sbin/clusterdeck-volume-sync"} {
					if !strings.Contains(script, want) {
						t.Errorf("node-0's mounts script lacks %q:\n%s", want, script)
					}
				}
				if !strings.Contains(log, "exporting 10.77.0.3:/shared") || !strings.Contains(log, "volume mounted (250 GB) mounted on /mnt/clusterdeck-volume") {
					t.Errorf("node-0's log does not show the export and the volume:\n%s", log)
				}
				continue
			}
			if !strings.Contains(script, "echo '10.77.0.1:/shared /shared nfs defaults,_netdev 0 0' >> /etc/fstab") ||
				strings.Contains(script, "exportfs") || strings.Contains(script, "rsync") {
				t.Errorf("%s's mounts script:\n%s", n.Name, script)
			}
			if !strings.Contains(log, "10.77.0.1:/shared on /shared type nfs4") {
				t.Errorf("%s's log does not show /shared mounted:\n%s", n.Name, log)
			}
		}
	})
}

// V4 on containers: no shared folder; the volume on the head only, and
// nothing to mount on the others.
func TestVolumeMountsOnContainer(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		c := w.launchVolume("L40S", 2, 2, 40)
		w.runUntil(c.ID, models.StatusReady, 20*time.Minute, 30*time.Second)
		w.clock.Advance(10 * time.Second)
		w.tick()
		head := w.mountSteps(c, 0)
		if len(head) != 1 || !strings.Contains(head[0].Script, "mount /dev/disk/by-label/clusterdeck-volume '/volume'") ||
			strings.Contains(head[0].Script, "/shared") {
			t.Fatalf("the container head's mounts: %+v", head)
		}
		if !strings.Contains(w.nodeLog(c, 0), "volume mounted (40 GB) mounted on /volume") {
			t.Errorf("node-0's log:\n%s", w.nodeLog(c, 0))
		}
		if m := w.mountSteps(c, 1); len(m) != 0 {
			t.Errorf("a container worker mounted %+v", m)
		}
	})
}

// B6, V3, V4: a stopped cluster keeps its volume (deleting it is refused
// while the cluster has not ended), and a resume boots every machine again,
// so each agent runs the mounts step again in its new boot: node-0 exports
// /shared and mounts and syncs the volume anew, the others mount /shared
// from it.
func TestVolumeMountedAgainAfterResume(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		c := w.launchVolume("H100_80GB", 3, 8, 250)
		c = w.runUntil(c.ID, models.StatusReady, 20*time.Minute, 30*time.Second)
		w.clock.Advance(10 * time.Second)
		w.tick()
		for rank := range 3 {
			if m := w.mountSteps(c, rank); len(m) != 1 {
				t.Fatalf("node-%d ran %d mounts steps before the stop, want 1", rank, len(m))
			}
		}
		c = w.stopNow(c.ID, models.StopByBalance)
		owner := w.store.As(models.Actor{OrgID: w.org.ID, EnvID: w.env.ID, Role: models.RoleOwner, Name: "owner@example.com"})
		var attached *models.VolumeAttachedError
		if _, err := owner.DeleteVolume(ctx, c.VolumeID); !errors.As(err, &attached) || attached.ClusterID != c.ID {
			t.Fatalf("deleting the volume of a stopped cluster: %v, want volume_attached", err)
		}
		if _, err := w.store.RequestResume(ctx, w.org.ID, c.ID, "test@example.com"); err != nil {
			t.Fatal(err)
		}
		c = w.runUntil(c.ID, models.StatusReady, 20*time.Minute, 30*time.Second)
		w.clock.Advance(10 * time.Second)
		w.tick()
		if v := w.cloud.Volume(c.GroupName()); v == nil || v.ID != c.VolumeID {
			t.Fatalf("after the resume the group's volume is %+v, want %s", v, c.VolumeID)
		}
		for rank := range 3 {
			m := w.mountSteps(c, rank)
			if len(m) != 2 {
				t.Fatalf("node-%d ran %d mounts steps after the resume, want one per boot", rank, len(m))
			}
			if rank == 0 && (!strings.Contains(m[1].Script, "mount /dev/disk/by-label/clusterdeck-volume '/mnt/clusterdeck-volume'") ||
				!strings.Contains(m[1].Script, "rsync -a /mnt/clusterdeck-volume/ '/shared/volume'/")) {
				t.Errorf("node-0's mounts after the resume do not mount and copy the volume:\n%s", m[1].Script)
			}
			if rank > 0 && !strings.Contains(m[1].Script, "10.77.0.1:/shared /shared nfs") {
				t.Errorf("node-%d's mounts after the resume do not mount /shared:\n%s", rank, m[1].Script)
			}
		}
	})
}

// noVolumes is a cloud that cannot attach a volume (like the Lambda
// adapter): a placement with one is refused as unsupported.
type noVolumes struct{ providers.Provider }

func (p noVolumes) PlaceGroup(ctx context.Context, req providers.PlaceRequest) (providers.Group, error) {
	if req.Volume != nil {
		return providers.Group{}, &providers.Error{Class: providers.ErrUnsupported, Provider: "sim", Op: "PlaceGroup",
			Code: "unsupported", Message: "no volumes here"}
	}
	return p.Provider.PlaceGroup(ctx, req)
}

// L4, V2, V4: a cloud that cannot attach the volume refuses the placement;
// the cluster fails at once (not retried until the cap) with the
// provider's reason, nothing is placed or billed, and the volume its launch
// created goes with it.
func TestPlacementWithVolumeUnsupportedFails(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		w := newWorld(t, db)
		w.job.Providers["sim"] = noVolumes{w.cloud}
		c := w.launchVolume("H100_80GB", 2, 8, 100)
		w.tick()
		got := w.cluster(c.ID)
		if got.Status != models.StatusFailed || got.LastError != "provider_rejected:validation" {
			t.Fatalf("status %s %q after one tick\n%s", got.Status, got.LastError, w.events(c.ID))
		}
		if ev := w.events(c.ID); !strings.Contains(ev, "no volumes here") {
			t.Errorf("no event gives the provider's reason:\n%s", ev)
		}
		if g, _ := w.cloud.DescribeGroup(context.Background(), c.GroupName()); len(g.Nodes) != 0 {
			t.Errorf("machines placed: %+v", g.Nodes)
		}
		var v models.Volume
		if err := db.Where("id = ?", got.VolumeID).Take(&v).Error; err != nil || v.DeletedAt == nil {
			t.Errorf("the launch's volume is left billing: %+v %v", v, err)
		}
		if w.billed() != 0 {
			t.Errorf("%d billed", w.billed())
		}
	})
}

// recordNodes passes every PlaceNode on and keeps its request.
type recordNodes struct {
	providers.Provider
	reqs *[]providers.PlaceRequest
}

func (p recordNodes) PlaceNode(ctx context.Context, group string, index int, req providers.PlaceRequest) (providers.Node, error) {
	*p.reqs = append(*p.reqs, req)
	return p.Provider.PlaceNode(ctx, group, index, req)
}

// L10, V4: a worker added to a cluster with a volume is placed with the
// cluster's volume in its request, like the group's first machines (a
// replacement of node-0 needs it attached), joins, and once it joined its
// agent mounts /shared from node-0 like the others.
func TestAddedWorkerMountsShared(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		w := newWorld(t, db)
		var reqs []providers.PlaceRequest
		w.job.Providers["sim"] = recordNodes{w.cloud, &reqs} // the registry every job of the world shares
		c := w.launchVolume("H100_80GB", 2, 8, 100)
		c = w.runUntil(c.ID, models.StatusReady, 20*time.Minute, 30*time.Second)
		w.clock.Advance(10 * time.Second)
		w.tick()
		owner := w.store.As(models.Actor{OrgID: w.org.ID, EnvID: w.env.ID, Role: models.RoleOwner, Name: "owner@example.com"})
		if _, _, err := owner.AddWorker(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		joined := func() bool {
			nodes, err := w.store.NodesFor(ctx, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			return len(nodes) == 3 && nodes[2].JoinKind == "" && nodes[2].Status == models.NodeReady
		}
		for i := 0; i < 30 && !joined(); i++ {
			w.clock.Advance(30 * time.Second)
			w.tick()
		}
		if !joined() {
			t.Fatalf("node-2 did not join\n%s", w.events(c.ID))
		}
		if len(reqs) != 1 || reqs[0].Volume == nil || reqs[0].Volume.ID != c.VolumeID || reqs[0].Count != 1 {
			t.Fatalf("PlaceNode requests %+v, want one carrying volume %s", reqs, c.VolumeID)
		}
		w.clock.Advance(10 * time.Second)
		w.tick()
		m := w.mountSteps(c, 2)
		if len(m) != 1 || !strings.Contains(m[0].Script, "10.77.0.1:/shared /shared nfs") || strings.Contains(m[0].Script, "exportfs") {
			t.Fatalf("node-2's mounts: %+v", m)
		}
		if log := w.nodeLog(c, 2); !strings.Contains(log, "10.77.0.1:/shared on /shared type nfs4") {
			t.Errorf("node-2's log does not show /shared mounted:\n%s", log)
		}
	})
}
