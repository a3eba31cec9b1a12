"""The one error type of cvl_data."""


class DatasetError(ValueError):
    """A dataset (on disk or being written) is missing, malformed, or used inconsistently.

    Messages name the file and the field at fault, e.g.
    ``"/data/drawer-open/actions.npy (field 'actions'): row 12 value 1.5 > action_high 1.0"``.
    """
