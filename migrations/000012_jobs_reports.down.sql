DROP TABLE reports;
DROP TABLE report_chunks;
DROP TABLE report_requests;
DROP TABLE jobs;
