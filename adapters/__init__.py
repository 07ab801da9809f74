"""What users import: clients per runtime and integrations (installed as
``mongo_sansio.adapters``).  Adapters drive the core's machines; they decide nothing."""
