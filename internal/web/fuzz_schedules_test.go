package web

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
)

// FuzzAPISchedule posts any body to POST /api/schedules. Beyond the contract
// (checkAnswer: no 5xx, a refusal says why and writes nothing), a schedule
// that is accepted is stored as sent.
func FuzzAPISchedule(f *testing.F) {
	for _, seed := range []string{
		nightly,
		`{"name":"s","cron":"*/5 * * * * *","body":"SELECT 1","overlap":"allow","misfire":"skip","paused":true}`,
		`{"name":"s","cron":"0 0 30 2 *","body":"SELECT 1"}`,
		`{"name":"s","cron":"0 2 * * *","time_zone":"Australia/Lord_Howe","body":"SELECT 1","priority":0,"group":"g"}`,
		`{"name":"s","cron":"@every 1h","body":"SELECT 1"}`,
		`{"name":"s","cron":"0 1 * * *","time_zone":"Local","body":"SELECT 1"}`,
		`{"name":"s","cron":"CRON_TZ=UTC 0 1 * * *","body":"SELECT 1"}`,
		`{"name":"s","cron":"0 1 * * *","body":"SELECT 1","timeout_seconds":1e308}`,
	} {
		f.Add(seed)
	}
	envs := newFuzzEnvs(f)
	f.Fuzz(func(t *testing.T, body string) {
		for _, e := range envs {
			rec := e.try(t, "POST", "/api/schedules", "application/json", body)
			if rec.Code != 201 {
				continue
			}
			var sent struct {
				Name string `json:"name"`
				Cron string `json:"cron"`
				Body string `json:"body"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &sent, json.RejectUnknownMembers(false)))
			stored, err := e.store.GetSchedule(e.ctx, sent.Name)
			require.NoError(t, err)
			require.Equal(t, sent.Body, stored.Task.Body, "%s: the body is stored as sent", e.dialect)
			require.Equal(t, strings.TrimSpace(sent.Cron), stored.Cron, "%s: the cron expression is stored as sent, trimmed", e.dialect)
			require.NoError(t, e.store.DeleteSchedule(e.ctx, sent.Name, "fuzz"), "the next input may take the name")
		}
	})
}

// FuzzScheduleForm posts any form body to POST /schedules/new: a preview
// (200), a schedule created (303), or the form again saying why, with nothing
// written.
func FuzzScheduleForm(f *testing.F) {
	for _, seed := range []string{
		nightlyForm("preview").Encode(),
		nightlyForm("save").Encode(),
		"name=s&cron=0+0+30+2+*&body=SELECT+1&action=preview",
		"name=s&cron=%40hourly&time_zone=Europe%2FPariss&body=SELECT+1",
		"name=s&cron=*+*+*+*+*+*&body=SELECT+1&priority=x&timeout_seconds=NaN",
	} {
		f.Add(seed)
	}
	envs := newFuzzEnvs(f)
	f.Fuzz(func(t *testing.T, form string) {
		for _, e := range envs {
			rec := e.try(t, "POST", "/schedules/new", "application/x-www-form-urlencoded", form)
			if rec.Code != 303 {
				continue
			}
			ss, err := e.store.Schedules(e.ctx)
			require.NoError(t, err)
			for _, s := range ss {
				require.NoError(t, e.store.DeleteSchedule(e.ctx, s.Name, "fuzz"))
			}
		}
	})
}
