DROP TABLE readpast_alert_conditions;
DROP TABLE readpast_alert_deliveries;
DROP TABLE readpast_alert_events;
