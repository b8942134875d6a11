"""The SMART App Launch from the chart (or standalone): the launch and its callback, the id_token,
the guards "a launch for this record's patient and EHR", roles, cookies and the EHR's style.
The grants and tokens it obtains are ``smartapp.access``'s, which the hooks and jobs share."""
