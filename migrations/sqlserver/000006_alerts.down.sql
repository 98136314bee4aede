DROP TABLE dbo.readpast_alert_conditions;
DROP TABLE dbo.readpast_alert_deliveries;
DROP TABLE dbo.readpast_alert_events;
