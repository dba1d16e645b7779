package api

import (
	"encoding/json"
	"maps"
)

// Error is the body of every answer that is not 2xx (A4, API2).
type Error struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody is an error: Message is for people, Code for programs, Fields
// names field-level problems (422). Some codes add members of their own,
// kept in Extra: no_capacity's reason, shape (a Shape), advice and, with
// reason not_in_stock, nodes_available; price_changed's reason, old and new
// (Quotes); quota_exceeded's resource, limit, inUse and requested;
// insufficient_balance's balance, committed, required, shortfall and topUpUrl.
type ErrorBody struct {
	Code    string                     `json:"code"`
	Message string                     `json:"message"`
	Fields  map[string]string          `json:"fields,omitempty"`
	Extra   map[string]json.RawMessage `json:"-"`
}

// Error codes a client acts on.
const (
	CodeNoCapacity          = "no_capacity"
	CodePriceChanged        = "price_changed"
	CodeQuotaExceeded       = "quota_exceeded"
	CodeInsufficientBalance = "insufficient_balance"
	CodeValidationFailed    = "validation_failed"
	CodeNotFound            = "not_found"
	CodeNotConnectable      = "not_connectable"
)

// MarshalJSON writes Extra's members beside code, message and fields.
func (b ErrorBody) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(b.Extra)+3)
	for k, v := range b.Extra {
		m[k] = v
	}
	m["code"], m["message"] = b.Code, b.Message
	if len(b.Fields) > 0 {
		m["fields"] = b.Fields
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads code, message and fields, and keeps every other member in Extra.
func (b *ErrorBody) UnmarshalJSON(raw []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	*b = ErrorBody{}
	for k, dst := range map[string]any{"code": &b.Code, "message": &b.Message, "fields": &b.Fields} {
		if v, ok := m[k]; ok {
			if err := json.Unmarshal(v, dst); err != nil {
				return err
			}
			delete(m, k)
		}
	}
	if len(m) > 0 {
		b.Extra = maps.Clone(m)
	}
	return nil
}

// Shape is the shape a refused quote or launch asked for (no_capacity's
// "shape", Q4).
type Shape struct {
	Accelerator      string       `json:"accelerator"`
	Nodes            int          `json:"nodes"`
	GPUsPerNode      int          `json:"gpusPerNode"`
	Storage          ShapeStorage `json:"storage"`
	MaxHourlyPrice   string       `json:"maxHourlyPrice,omitempty"`
	Location         string       `json:"location,omitempty"`
	OfferID          string       `json:"offerId,omitempty"`
	IncludeCommunity bool         `json:"include_community"`
}

// ShapeStorage is a Shape's persistent volume.
type ShapeStorage struct {
	PersistentGB int `json:"persistentGb"`
}
