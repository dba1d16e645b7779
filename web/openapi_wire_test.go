package web

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/api"
	"github.com/clusterdeck/clusterdeck/api/agentapi"
)

// TestWireTypesMatchOpenAPI keeps the document checked against the wire
// types: each type of api and api/agentapi has exactly the
// members of its schema, nested objects included. The server writes these
// types and the Go client reads and sends them, so a field added to one
// side only fails here.
func TestWireTypesMatchOpenAPI(t *testing.T) {
	o := loadOpenAPI(t)
	for name, v := range map[string]any{
		"Offer": api.Offer{}, "OfferGroup": api.OfferGroup{}, "OffersResponse": api.OffersResponse{},
		"Storage": api.Storage{}, "QuoteBody": api.QuoteBody{}, "LaunchBody": api.LaunchBody{},
		"LineItem": api.LineItem{}, "Quote": api.Quote{}, "ClusterNode": api.ClusterNode{},
		"ClusterEvent": api.ClusterEvent{}, "Cluster": api.Cluster{}, "ClusterList": api.ClusterList{},
		"ConnectionNode": api.ConnectionNode{}, "Command": api.Command{}, "Connections": api.Connections{},
		"LogLine": api.LogLine{}, "LogLines": api.LogLines{}, "Me": api.Me{},
		"QuoteRequestBody": api.QuoteRequestBody{}, "QuoteRequest": api.QuoteRequest{}, "QuoteRequestList": api.QuoteRequestList{},
		"Error": api.Error{}, "ErrorBody": api.ErrorBody{}, "Shape": api.Shape{}, "NCCLCheck": api.NCCLCheck{},
		"TopUpBody": api.TopUpBody{}, "TopUp": api.TopUp{},
		"AutoRechargeBody": api.AutoRechargeBody{}, "AutoRecharge": api.AutoRecharge{}, "FailedCharge": api.FailedCharge{},
		"BillingBalance": api.BillingBalance{}, "BillingUsage": api.BillingUsage{}, "ClusterUsage": api.ClusterUsage{},
		"MachineUsage": api.MachineUsage{}, "StateInterval": api.StateInterval{},
		"Volume": api.Volume{}, "VolumeBody": api.VolumeBody{}, "VolumeGrowBody": api.VolumeGrowBody{}, "VolumeList": api.VolumeList{},
		"VolumeUsage": api.VolumeUsage{}, "ClusterVolume": api.ClusterVolume{}, "Mount": api.Mount{},
		"RunBody": api.RunBody{}, "Run": api.Run{}, "RunBill": api.RunBill{}, "RunInterruption": api.RunInterruption{}, "RunList": api.RunList{},
		"BudgetBody": api.BudgetBody{}, "Budgets": api.Budgets{}, "Budget": api.Budget{}, "ClusterRunOut": api.ClusterRunOut{},

		"AgentClaimRequest": agentapi.ClaimRequest{}, "AgentClaim": agentapi.ClaimResponse{},
		"AgentCheckinRequest": agentapi.CheckinRequest{}, "AgentPeer": agentapi.Peer{}, "AgentCheckin": agentapi.CheckinResponse{},
		"AgentPeersRequest": agentapi.PeersRequest{}, "AgentPeersResult": agentapi.PeersResponse{}, "AgentTask": agentapi.Task{},
		"AgentHeartbeat": agentapi.HeartbeatResponse{}, "AgentLogsRequest": agentapi.LogsRequest{},
		"AgentHeartbeatRequest": agentapi.HeartbeatRequest{}, "AgentStartState": agentapi.StartState{}, "AgentStartOrder": agentapi.StartOrder{},
		"AgentMounts": agentapi.Mounts{}, "AgentMountsState": agentapi.MountsState{}, "AgentVolumeMount": agentapi.VolumeMount{},
		"NodeStartCommand": api.NodeStartCommand{}, "Port": api.Port{},
		"GPUWatch": api.GPUWatch{}, "GPUWatchBody": api.GPUWatchBody{}, "GPUMetrics": api.GPUMetrics{}, "GPUValue": api.GPUValue{},
		"AgentTaskResultRequest": agentapi.TaskResult{}, "AgentTaskResult": agentapi.TaskStatus{},
	} {
		schema, ok := o.pointer("#/components/schemas/" + name)
		if !ok {
			t.Errorf("no schema %s in the document", name)
			continue
		}
		for _, d := range o.wireDrift(name, reflect.TypeOf(v), schema.(map[string]any)) {
			t.Error(d)
		}
	}
}

// wireDrift compares a Go type's JSON members with a schema's properties.
func (o *openAPI) wireDrift(where string, typ reflect.Type, schema map[string]any) []string {
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
		typ = typ.Elem()
		if items, ok := o.resolve(schema)["items"].(map[string]any); ok {
			schema = items
		}
	}
	if typ.Kind() != reflect.Struct || typ == reflect.TypeOf(time.Time{}) {
		return nil
	}
	props := o.properties(schema)
	fields := jsonFields(typ)
	var drift []string
	for name, f := range fields {
		p, ok := props[name]
		if !ok {
			drift = append(drift, where+"."+name+": in the Go type, not in the document")
			continue
		}
		drift = append(drift, o.wireDrift(where+"."+name, f.Type, p)...)
	}
	for name := range props {
		if _, ok := fields[name]; !ok {
			drift = append(drift, where+"."+name+": in the document, not in the Go type")
		}
	}
	slices.Sort(drift)
	return drift
}

// properties merges a schema's own properties with its allOf parts'; a
// oneOf with null is its other member.
func (o *openAPI) properties(schema map[string]any) map[string]map[string]any {
	s := o.resolve(schema)
	out := map[string]map[string]any{}
	if alts, ok := s["oneOf"].([]any); ok {
		for _, a := range alts {
			if a, ok := a.(map[string]any); ok && a["type"] != "null" {
				return o.properties(a)
			}
		}
	}
	for _, part := range anySlice(s["allOf"]) {
		if part, ok := part.(map[string]any); ok {
			for k, v := range o.properties(part) {
				out[k] = v
			}
		}
	}
	props, _ := s["properties"].(map[string]any)
	for k, v := range props {
		if v, ok := v.(map[string]any); ok {
			out[k] = v
		}
	}
	return out
}

func anySlice(v any) []any { s, _ := v.([]any); return s }

// jsonFields names a struct's JSON members, embedded structs' included.
func jsonFields(typ reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-" || !f.IsExported():
		case f.Anonymous && tag == "":
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
		case tag == "":
			out[f.Name] = f
		default:
			out[tag] = f
		}
	}
	return out
}
