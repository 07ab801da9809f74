"""Operation flows: commands, CRUD and their results (generators over mongo_sansio.flow)."""
