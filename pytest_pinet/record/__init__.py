"""Recording measurements: results files now, the SQLite store and Allure on top later."""
