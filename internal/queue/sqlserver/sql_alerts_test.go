package sqlserver

import (
	"database/sql"
	"time"

	"readpast/internal/queue"
)

// alertBoundQueries are the alert batches with arguments as the store binds them.
func alertBoundQueries() []boundQuery {
	d := queue.NewAlertDelivery{Key: "k", LateKey: "k2", Rule: "r", Operator: "o", Channel: "email", Kind: "task_failed", Subject: "s", Count: 1}
	return []boundQuery{
		{claimAlertEventsBatch, leaseArgs("n", 10, time.Minute)},
		{consumeAlertEventBatch, consumeArgs(1, "n")},
		{setAlertConditionBatch, conditionArgs(queue.AlertConditionChange{Key: "k", Firing: true})},
		{clearAlertConditionBatch, []any{sql.Named("key", "k")}},
		{addAlertDeliveryBatch, deliveryArgs(d)},
		{alertAuditBatch, alertAuditArgs(queue.AlertWrite{Actor: "a", Action: "send_test_alert"})},
		{claimAlertDeliveriesBatch, leaseArgs("n", 10, time.Minute)},
		{endAlertDeliveryBatch, endDeliveryArgs(queue.AlertDeliveryEnd{ID: 1, Node: "n", Attempt: 1, Sent: true})},
		{alertDeliveriesQuery, alertDeliveriesArgs(10, "", 100)},
		{alertConditionsQuery, nil},
		{purgeAlertsBatch, purgeAlertsArgs(time.Now(), 100)},
		{oldestPendingQuery, nil},
	}
}
