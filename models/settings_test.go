package models_test

import (
	"reflect"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
)

// The settings are fixed when the Store is built (OP4): the Store has no
// exported field to assign one to, a transaction's Store carries the same
// value, and neither the caller's maps nor the copy Settings returns reach
// the store's.
func TestSettingsAreFixedAtConstruction(t *testing.T) {
	st := reflect.TypeOf(models.Store{})
	for i := range st.NumField() {
		if f := st.Field(i); f.IsExported() && f.Name != "Clock" {
			t.Errorf("Store.%s is exported: settings are given to NewStoreWith, never assigned", f.Name)
		}
	}
	refusals := map[string]string{"lambda": "cannot stop"}
	secret := []byte("0123456789abcdef0123456789abcdef")
	s := models.NewStoreWith(modelstest.Open(t, "sqlite"), nil, models.Settings{StopRefusals: refusals, MachineKeySecret: secret,
		BalanceGrace: 90, Verify: models.VerifyThresholds{RingPercent: 80}})
	refusals["sim"] = "changed by the caller"
	secret[0] = 'X'
	got := s.Settings()
	got.StopRefusals["runpod"] = "changed through the copy"
	if s.StopRefusal("sim") != "" || s.StopRefusal("runpod") != "" || s.StopRefusal("lambda") != "cannot stop" {
		t.Errorf("the store's stop refusals changed: %v", s.Settings().StopRefusals)
	}
	if s.Settings().MachineKeySecret[0] != '0' {
		t.Error("the caller's secret bytes reached the store")
	}
	if v := s.Settings().Verify; v.RingPercent != 80 || v.PairBelowMedianPercent != models.DefaultVerifyThresholds.PairBelowMedianPercent ||
		v.Window != models.DefaultVerifyThresholds.Window {
		t.Errorf("verification thresholds %+v: want 80 with the defaults for the rest", v)
	}
	if err := s.Tx(t.Context(), func(tx *models.Store) error {
		if !reflect.DeepEqual(tx.Settings(), s.Settings()) {
			t.Errorf("the transaction's settings %+v differ from the store's %+v", tx.Settings(), s.Settings())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
