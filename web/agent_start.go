package web

import (
	"github.com/clusterdeck/clusterdeck/api/agentapi"
	"github.com/clusterdeck/clusterdeck/models"
)

// The heartbeat's wire (N3, V4): what the agent reports goes to
// models.Heartbeat as it is; the node's orders come back and are put on
// the wire here.

// heartbeatReport is the heartbeat's report for models.Heartbeat.
func heartbeatReport(req agentapi.HeartbeatRequest) models.HeartbeatReport {
	var r models.HeartbeatReport
	if st := req.Start; st != nil {
		r.Start = &models.StartReport{State: st.State, StartedAt: st.StartedAt, ExitCode: st.ExitCode, EndedAt: st.EndedAt, Error: st.Error,
			Generation: st.Generation}
	}
	if st := req.Mounts; st != nil {
		r.Mounts = &models.MountsReport{State: st.State, StartedAt: st.StartedAt, EndedAt: st.EndedAt, Error: st.Error}
	}
	if g := req.GPU; g != nil {
		r.GPU = &models.GPUReport{NoSMI: g.NoSMI, Samples: make([]models.GPUSample, len(g.Samples)), XIDs: make([]models.XIDLine, len(g.XIDs))}
		for i, s := range g.Samples {
			r.GPU.Samples[i] = models.GPUSample{At: s.At, Index: s.Index, UUID: s.UUID, UtilPct: s.UtilPct, MemUsedMiB: s.MemUsedMiB,
				MemTotalMiB: s.MemTotalMiB, TempC: s.TempC, PowerW: s.PowerW, SMClockMHz: s.SMClockMHz, ECCUncorrected: s.ECCUncorrected, Throttle: s.Throttle}
		}
		for i, x := range g.XIDs {
			r.GPU.XIDs[i] = models.XIDLine{At: x.At, Code: x.Code, Text: x.Text}
		}
	}
	return r
}

// heartbeatResponse is the node's orders on the wire.
func heartbeatResponse(node models.ClusterNode, o models.HeartbeatOrders) agentapi.HeartbeatResponse {
	var resp agentapi.HeartbeatResponse
	switch {
	case o.Task != nil:
		p := o.Task.Decode()
		resp.Task = &agentapi.Task{ID: o.Task.ID, Kind: o.Task.Kind, Software: o.Task.Software, Role: o.Task.Role,
			Files: p.Files, Env: p.Env, Script: p.Script}
	case o.Verify != nil:
		resp.Task = &agentapi.Task{ID: o.Verify.ID, Kind: agentapi.TaskVerify, Software: o.Verify.Check, Role: node.Name,
			Env: o.Verify.EnvMap(), Script: o.Verify.Script}
	case o.NCCL != nil:
		resp.Task = &agentapi.Task{ID: o.NCCL.TaskID, Kind: agentapi.TaskNCCL, Software: agentapi.NCCLSoftware, Role: node.Name, Script: o.NCCL.Script}
	}
	if s := o.Start; s != nil {
		resp.Start = &agentapi.StartOrder{User: s.User, Env: s.Env, Publish: s.Publish, Mounts: agentMountsOf(s.Mounts),
			Generation: s.Generation, Script: s.Script, Stop: s.Stop, Warn: s.Warn}
	}
	return resp
}

// agentMounts is node rank's part of the cluster's mount plan (V4,
// models.MountPlan) on the wire; nil when it mounts nothing.
func agentMounts(plan models.MountPlan, nodes []models.ClusterNode, rank int, hostfile string) *agentapi.Mounts {
	nm, ok := plan.ForNode(nodes, rank, hostfile)
	if !ok {
		return nil
	}
	return agentMountsOf(&nm)
}

func agentMountsOf(nm *models.NodeMounts) *agentapi.Mounts {
	if nm == nil {
		return nil
	}
	m := &agentapi.Mounts{Shared: nm.Shared, Head: nm.Head, Clients: nm.Clients, Hostfile: nm.Hostfile}
	if v := nm.Volume; v != nil {
		m.Volume = &agentapi.VolumeMount{ID: v.ID, Name: v.Name, SizeGB: v.SizeGB, Path: nm.Path}
	}
	return m
}
