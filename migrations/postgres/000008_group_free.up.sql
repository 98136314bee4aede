-- Version 8 gives SQL Server's groups a maintained has_free flag and an index
-- of the groups with a free slot, which its claim is driven by; this dialect's
-- claim walks the groups in a function of its own. The file keeps version
-- numbers alike on every dialect: version N is the same schema everywhere.
SELECT 1;
