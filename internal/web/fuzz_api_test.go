package web

import (
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
)

// FuzzAPITask posts any body to POST /api/tasks. Beyond the contract
// (checkAnswer), a task that is accepted is stored as it was sent.
func FuzzAPITask(f *testing.F) {
	envs := newFuzzEnvs(f)
	f.Fuzz(func(t *testing.T, body string) {
		for _, e := range envs {
			rec := e.try(t, "POST", "/api/tasks", "application/json", body)
			if rec.Code != 201 {
				continue
			}
			var sent struct {
				Body  string `json:"body"`
				Group string `json:"group"`
				Chain string `json:"chain"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &sent, json.RejectUnknownMembers(false)))
			var created struct {
				ID int64 `json:"id"`
			}
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &created, json.RejectUnknownMembers(false)))
			stored, err := e.store.Get(e.ctx, created.ID)
			require.NoError(t, err)
			if keepsEscapesAsSent(t, e.dialect) {
				require.Equal(t, sent.Body, stored.Body, "%s: the body is stored as sent", e.dialect)
				require.Equal(t, sent.Group, stored.Group, "%s: the group is stored as sent", e.dialect)
				require.Equal(t, sent.Chain, stored.Chain, "%s: the chain is stored as sent", e.dialect)
			}
		}
	})
}

// FuzzAPIBatch posts any body to POST /api/tasks/batch: an accepted batch
// answers one id per task sent.
func FuzzAPIBatch(f *testing.F) {
	envs := newFuzzEnvs(f)
	f.Fuzz(func(t *testing.T, body string) {
		for _, e := range envs {
			rec := e.try(t, "POST", "/api/tasks/batch", "application/json", body)
			if rec.Code != 201 {
				continue
			}
			var sent struct {
				Tasks []any `json:"tasks"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &sent, json.RejectUnknownMembers(false)))
			var created struct {
				IDs []int64 `json:"ids"`
			}
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &created))
			require.Len(t, created.IDs, len(sent.Tasks), "%s: one id per task", e.dialect)
		}
	})
}
