"""The usage dashboard: HTML pages for users and the operator.

* :mod:`.routes` — the endpoints (sign-in, sign-out, the user and admin views);
* :mod:`.session` — the signed dashboard cookies and CSRF values;
* :mod:`.pages` — the HTML of each page;  :mod:`.chart` — the usage chart (inline SVG) and money format.

Nothing is imported here: each module is loaded where it is used.
"""
